"""Results follow the code: each job's inputs are the code and data it uses, computed when the DAG is built
(quicack.jobs.code_graph, quicack.jobs.reference_use, quicack.compiled_core), so that an edit re-runs exactly the jobs
whose outputs it can change.

Two kinds of proof. That the computed sets are complete: the pipeline's commands and every notebook run for real on
recorded data, and every quicack module they import (sys.modules) and every data/reference file they read is among
their computed inputs. That they are exact: in a copy of the repository whose every output is up to date (made by
`snakemake --touch`, nothing run), one file is edited at a time and `snakemake -n` must plan exactly the jobs that use
it (Snakemake 9 re-runs nothing for a bare mtime change with the same checksum, so the edits change content).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from quicack.compiled_core import engine_identity, installed_identity, source_files, source_identity
from quicack.jobs import job_inputs
from quicack.jobs.code_graph import CodeGraph
from quicack.jobs.job_inputs import WorkflowInputs
from quicack.jobs.reference_use import READER_MODULE, ReferenceReadError, ReferenceUse
from tests.conftest import REPO, SAMPLE_RAW

SOURCE = REPO / "src"
NOTEBOOKS = REPO / "notebooks"
REFERENCE = REPO / "data" / "reference"
SCAN = REPO / "data" / "scan"


@pytest.fixture(scope="module")
def graph() -> CodeGraph:
    return CodeGraph(SOURCE)


@pytest.fixture(scope="module")
def reference_use(graph) -> ReferenceUse:
    return ReferenceUse(graph, REFERENCE)


# --- the graph sees every import and every reference read


def test_names_a_package_imports_on_first_use_lead_to_their_module_only(graph):
    """`from quicack.layout import group_from_key` reaches quicack.layout.runs, not the scanner layout; `from
    quicack.pcap import decode_capture` the decoder, not the `quicack pcap` command."""
    assert graph.lazy_names("quicack.layout")["group_from_key"] == "quicack.layout.runs"
    assert graph.imports("quicack.stages.group_arguments") == {"quicack.layout.runs"}
    assert "quicack.layout.scan_folders" not in graph.reach(["quicack.stages.group_arguments"])
    assert graph.lazy_names("quicack.pcap")["decode_capture"] == "quicack.pcap.decode"
    scan_capture = graph.imports("quicack.scan.scan_capture")
    assert "quicack.pcap.decode" in scan_capture and "quicack.pcap.pcap_command" not in scan_capture


def test_the_type_checker_sees_the_names_a_package_imports_on_first_use(graph):
    """Each lazy package's `if TYPE_CHECKING:` block imports exactly its `_MODULES` table's names from the same
    submodules (mypy reads those imports; the loader and quicack.jobs.code_graph read the table); the graph does not
    follow the block: `from quicack.layout import group_from_key` still reaches quicack.layout.runs only."""
    for package in ("quicack.layout", "quicack.pcap", "quicack.scan"):
        tree = graph.module_tree(package)
        blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
        typed = {
            alias.name: statement.module
            for block in blocks for statement in block.body if isinstance(statement, ast.ImportFrom)
            for alias in statement.names
        }
        assert typed and typed == graph.lazy_names(package), package
    assert graph.reach(["quicack.layout"]) == {"quicack", "quicack.layout", "quicack.lazy_names"}


def test_every_import_named_as_text_is_one_the_graph_reads():
    """The package imports by name in three places only, each of which quicack.jobs.code_graph resolves: the lazy-name
    loader (the packages' `_MODULES` tables), the `quicack` command (its COMMANDS table) and the fuzz target (a
    'quicack.<module>:<function>' literal)."""
    dynamic = {
        str(path.relative_to(SOURCE / "quicack"))
        for path in (SOURCE / "quicack").rglob("*.py")
        if re.search(r"\bimport_module\(|__import__\(", path.read_text(encoding="utf-8"))
        and not path.is_relative_to(SOURCE / "quicack" / "testbed")
    }
    assert dynamic == {"lazy_names.py", "cli.py", "fuzz/runner.py"}
    assert re.search(
        r'"quicack\.fuzz\.runner:run_command"', (SOURCE / "quicack" / "fuzz" / "runner.py").read_text(encoding="utf-8")
    )
    for package in ("layout", "pcap", "scan"):
        assert "lazy_names(__name__, _MODULES)" in (SOURCE / "quicack" / package / "__init__.py").read_text(
            encoding="utf-8"
        )


def test_a_subcommand_reaches_its_own_module_not_the_others(graph):
    """`quicack ingest-group` runs the ingest, not the derive's metrics, the figures or the database; `quicack
    derive-group` the metrics (all of the derive's: ack_runs, ack_breakdown, tcp_ack_runs, return_path, run_batches,
    which the hand-typed list missed), not the capture decoder; `quicack build-db` the path checks."""
    ingest = graph.command_modules("ingest-group")
    assert {
        "quicack.stages.ingest",
        "quicack.pcap.decode",
        "quicack.qlog.lane",
        "quicack.stages.ingest_stage",
    } <= ingest
    assert not {m for m in ingest if m.startswith(("quicack.metrics", "quicack.figures", "quicack.stages.derive"))}
    derive = graph.command_modules("derive-group")
    assert {f"quicack.metrics.{m}" for m in ("ack_runs", "ack_breakdown", "tcp_ack_runs", "return_path")} <= derive
    assert "quicack.storage.run_batches" in derive and "quicack.pcap.decode" not in derive
    assert "quicack.storage.path_checks" in graph.command_modules("build-db")
    assert graph.command_modules("sql").isdisjoint({"quicack.stages.ingest_stage", "quicack.fuzz.runner"})


def test_package_data_a_module_names_is_among_its_code(tmp_path):
    """A data file read beside its module (`Path(__file__).with_name("table.csv")`, as the frame-type table is) is a
    code input of whatever reaches that module (hand-made package: the mechanism, on a file of known content)."""
    package = tmp_path / "quicack"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "table.csv").write_text("a,b\n", encoding="utf-8")
    (package / "reader.py").write_text(
        'from pathlib import Path\n\nTABLE = Path(__file__).with_name("table.csv")\n', encoding="utf-8"
    )
    (package / "user.py").write_text("from quicack.reader import TABLE\n", encoding="utf-8")
    graph = CodeGraph(tmp_path)
    assert graph.files(graph.reach(["quicack.user"])) == sorted(
        [package / "__init__.py", package / "reader.py", package / "table.csv", package / "user.py"]
    )


def test_every_reference_reader_is_declared_and_every_call_resolves(graph, reference_use):
    """Each function of quicack.reference that reads a file of REFERENCE_DIR (itself or through another reader) says
    which in READS; every reader call in the package names its file by literals; no other module reads the folder."""
    tree = graph.module_tree(READER_MODULE)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    readers = set(reference_use.readers)
    assert functions and readers <= set(functions)
    for name, node in functions.items():
        mentioned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if "REFERENCE_DIR" in mentioned or mentioned & (readers - {name}):
            assert name in readers, f"quicack.reference.{name} reads data/reference but is not in READS"
    assert {path.name for path in reference_use.package_reads()} == {path.name for path in REFERENCE.glob("*.csv")}
    outside = [
        str(path.relative_to(SOURCE)) for path in (SOURCE / "quicack").rglob("*.py")
        if path.name != "reference.py" and "REFERENCE_DIR" in path.read_text(encoding="utf-8")
    ]  # fmt: skip
    assert outside == []


def test_a_reader_called_with_a_variable_is_refused(tmp_path):
    """A notebook or module that reads a reference file the workflow cannot name makes the DAG fail, not miss it."""
    shutil.copytree(SOURCE / "quicack", tmp_path / "quicack", ignore=shutil.ignore_patterns("__pycache__"))
    script = tmp_path / "notebook.py"
    script.write_text(
        "from quicack.reference import paper_table\n\npaper = 'imc24'\npaper_table(paper, 'tab02')\n", encoding="utf-8"
    )
    with pytest.raises(ReferenceReadError, match="non-literal paper"):
        ReferenceUse(CodeGraph(tmp_path), REFERENCE).script_reads(script)


# What every artefact's footnote reads: the implementations' conditions of the runs drawn (quicack.rendered).
FOOTNOTE_READS = {"implementation_conditions.csv"}


def test_a_notebook_reads_its_own_papers_tables(reference_use):
    def reads(artefact: str) -> set[str]:
        every = {path.name for path in reference_use.script_reads(NOTEBOOKS / f"{artefact}.py")}
        assert FOOTNOTE_READS <= every, artefact
        return every - FOOTNOTE_READS

    assert reads("imc24-tab03") == {"imc24_tab03.csv"}
    assert reads("imc24-tab02") == {"imc24_tab02.csv"}
    assert reads("rethink-claims") == {"rethink_claims.csv", "rethink_tab03.csv"}  # Table III's cells are claims
    assert reads("imc24-fig05") == set()
    assert "cdn_asn.csv" in reads("imc24-tab05") and "cdn_asn.csv" in reads("imc24-fig08")
    assert {path.name for path in reference_use.command_reads("scan-part")} == {"cdn_asn.csv"}


def test_kept_job_inputs_are_those_of_the_current_source(tmp_path, graph, reference_use, monkeypatch):
    """The job inputs kept between Snakemake starts (quicack.jobs.job_inputs) are what the graph computes; a start with
    the package unchanged reads them without walking the source; an edit that adds an import is answered from the
    edited source; a damaged cache file is computed again."""
    source = tmp_path / "src"
    shutil.copytree(SOURCE / "quicack", source / "quicack", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / ".snakemake" / "job_inputs.json"
    notebook = NOTEBOOKS / "imc24-fig14.py"
    commands = ("build-db", "ingest-group", "scan-part")

    def answers(inputs: WorkflowInputs) -> dict:
        return {command: inputs.command(command) for command in commands} | {"notebook": inputs.script(notebook)}

    computed = WorkflowInputs(source, REFERENCE, cache)
    first = answers(computed)
    computed.save()
    modules = graph.command_modules("build-db")
    assert first["build-db"].code == [str(source / p.relative_to(SOURCE)) for p in graph.files(modules)]
    assert first["scan-part"].reference == sorted(str(p) for p in reference_use.command_reads("scan-part"))
    assert first["ingest-group"].uses_core and not first["build-db"].uses_core

    def no_walk(*args):
        raise AssertionError("the source was walked although the package is unchanged")

    with monkeypatch.context() as patched:
        patched.setattr(job_inputs, "CodeGraph", no_walk)
        assert answers(WorkflowInputs(source, REFERENCE, cache)) == first

    added = source / "quicack" / "scan" / "classify.py"
    assert str(added) not in first["build-db"].code
    path_checks = source / "quicack" / "storage" / "path_checks.py"
    path_checks.write_text(
        path_checks.read_text(encoding="utf-8") + "\nfrom quicack.scan import classify  # noqa: E402, F401\n",
        encoding="utf-8",
    )
    edited = answers(WorkflowInputs(source, REFERENCE, cache))
    assert str(added) in edited["build-db"].code and edited == answers(WorkflowInputs(source, REFERENCE, None))

    cache.write_text('{"fingerprint": ', encoding="utf-8")
    assert answers(WorkflowInputs(source, REFERENCE, cache)) == edited


# --- the compiled core's build identity


def _crate_copy(tmp_path: Path) -> Path:
    crate = tmp_path / "rust" / "quicack_core"
    shutil.copytree(REPO / "rust" / "quicack_core", crate, ignore=shutil.ignore_patterns("target", ".*"))
    return crate


def test_the_core_identity_follows_its_sources_and_the_data_it_embeds(tmp_path):
    crate = _crate_copy(tmp_path)
    first = source_identity(crate)
    assert re.fullmatch(r"\d+\.\d+\.\d+\+[0-9a-f]{16}", first)
    lib = crate / "src" / "lib.rs"
    original = lib.read_text(encoding="utf-8")
    lib.write_text(original + "\n// edited\n", encoding="utf-8")
    assert source_identity(crate) != first
    lib.write_text(original, encoding="utf-8")
    assert source_identity(crate) == first
    # A file outside the crate that a Rust source names by a relative literal (what the build embeds).
    data = tmp_path / "src" / "quicack" / "embedded.csv"
    data.parent.mkdir(parents=True)
    data.write_text("name,type\n", encoding="utf-8")
    (crate / "build.rs").write_text(
        (crate / "build.rs").read_text(encoding="utf-8") + '\n// "../../src/quicack/embedded.csv"\n', encoding="utf-8"
    )
    assert data.resolve() in source_files(crate)
    named = source_identity(crate)
    data.write_text("name,type\nack,2\n", encoding="utf-8")
    assert source_identity(crate) != named


def test_the_installed_core_was_built_from_these_sources():
    """The build script's hash (rust/quicack_core/build_identity.rs) and quicack.compiled_core's agree: a core built
    from this checkout reports the identity its sources have. Fails when the installed core is older than the
    sources (rebuild it: bash install.sh), as the workflow warns."""
    pytest.importorskip("quicack_core", reason="quicack_core is not installed (optional: pure-Python engine)")
    assert installed_identity() == source_identity(), "the installed quicack_core is stale: bash install.sh rebuilds it"


def test_without_the_core_the_engines_are_python_and_nothing_warns(tmp_path):
    """quicack_core not installed (a path entry that hides it): the identity names the pure-Python engine, there is no
    installed build to warn about."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\n\nclass Hide:\n    def find_spec(self, name, path=None, target=None):\n        if name == "
        "'quicack_core':\n            raise ImportError('hidden')\n\nsys.meta_path.insert(0, Hide())\n",
        encoding="utf-8",
    )
    code = ("from quicack.compiled_core import engine_identity, installed_identity, stale_core_warning; "
            "print(engine_identity(), installed_identity(), stale_core_warning(), sep='|')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), str(SOURCE)])}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, encoding="utf-8"
    ).stdout
    assert out.strip() == "pcap python, qlog python|None|None"
    # Here, with the core as installed, the identity names what this process runs.
    here = engine_identity()
    if installed_identity() is None:
        assert here == "pcap python, qlog python"
    else:
        assert "compiled" in here and here.endswith(f": quicack_core {installed_identity()}"), here


# --- complete: what runs is among the inputs


DRIVER = r"""
import atexit, json, sys
from pathlib import Path

import polars as pl

out, reference = Path(sys.argv[1]), Path(sys.argv[2]).resolve()
reads = set()
read_csv = pl.read_csv


def recorded(source, *args, **kwargs):
    if isinstance(source, (str, Path)) and Path(source).resolve().is_relative_to(reference):
        reads.add(Path(source).resolve().name)
    return read_csv(source, *args, **kwargs)


def opened(event, args):
    if event == "open" and isinstance(args[0], (str, Path)) and Path(args[0]).resolve().is_relative_to(reference):
        reads.add(Path(args[0]).resolve().name)


pl.read_csv = recorded
sys.addaudithook(opened)


def quicack_modules():
    return {name for name in sys.modules if name == "quicack" or name.startswith("quicack.")}


def notebook(path, parameters):
    lines = Path(path).read_text().splitlines()
    start = lines.index('# %% tags=["parameters"]')
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("# %%"))
    code = "\n".join(lines[:end] + [f"{k} = {v!r}" for k, v in parameters.items()] + lines[end:])
    exec(compile(code, path, "exec"), {"__name__": "__main__"})


results = {}
if sys.argv[3] == "notebooks":
    parameters = json.loads(sys.argv[4])
    for path in sys.argv[5:]:
        before = quicack_modules()
        reads.clear()
        try:
            notebook(path, parameters)
            error = None
        except Exception as exc:  # noqa: BLE001 - reported by the test
            error = f"{type(exc).__name__}: {exc}"
        modules = sorted(quicack_modules() - before)
        results[Path(path).stem] = {"modules": modules, "reads": sorted(reads), "error": error}
    out.write_text(json.dumps(results))
else:
    atexit.register(lambda: out.write_text(json.dumps({"modules": sorted(quicack_modules()), "reads": sorted(reads)})))
    from quicack.cli import main

    sys.exit(main(sys.argv[3:]))
"""


def _run(tmp_path: Path, name: str, *args: str) -> dict:
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "PYTHONPATH": str(SOURCE)}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(out), str(REFERENCE), *args], env=env,
                          capture_output=True, text=True, cwd=tmp_path, encoding="utf-8")
    assert done.returncode == 0, f"{name}: {done.stderr[-2000:]}"
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_every_module_and_reference_file_a_job_uses_is_among_its_inputs(tmp_path, graph, reference_use):
    """The pipeline's commands on a recorded run group (captures and qlogs of ngtcp2 <-> aioquic, imc24 Table 3) and a
    day of the embedded scan, then every notebook on the database they make: each imports only modules of its computed
    code and reads only reference files of its computed inputs (a small group: the notebooks need a database, not
    many runs)."""
    parquet, db = tmp_path / "parquet", tmp_path / "quicack.duckdb"
    scan_part = "@scan@hamburg@2024-08-07"
    commands = {
        "ingest-group": ["--raw", str(SAMPLE_RAW), "--group", "ngtcp2_aioquic", "--dataset", "sample",
                         "--parquet", str(parquet)],
        "dataset-issues": ["--raw", str(SAMPLE_RAW), "--parquet", str(parquet)],
        "derive-group": ["--parquet", str(parquet), "--group", "ngtcp2_aioquic"],
        "scan-part": ["--root", str(SCAN / "raw"), "--part", scan_part, "--parquet", str(parquet),
                      "--prefix-to-asn", str(SCAN / "prefix_asn.csv")],
        "build-db": ["--parquet", str(parquet), "--db", str(db), "--summary", str(tmp_path / "summary.txt"),
                     "--parts", "ngtcp2_aioquic", scan_part, "_dataset",
                     "--description", str(SAMPLE_RAW.parent / "dataset.yaml"),
                     "--scan-description", str(SCAN / "dataset.yaml"),
                     "--path-checks", str(SAMPLE_RAW.parent / "path_check.csv")],
    }
    ran = {command: _run(tmp_path, command, command, *args) for command, args in commands.items()}
    notebooks = sorted(NOTEBOOKS.glob("*.py"))
    parameters = {"db": str(db), "out_dir": str(tmp_path / "out"), "formats": "png"}
    ran |= _run(tmp_path, "notebooks", "notebooks", json.dumps(parameters), *map(str, notebooks))
    statuses = sorted(str(p) for p in (tmp_path / "out").glob("*.status.json"))
    claims = sorted(str(p) for p in (tmp_path / "out").glob("*-claims.csv"))
    ran["render-summary"] = _run(
        tmp_path, "render-summary", "render-summary", *statuses, "--out", str(tmp_path / "r.txt")
    )
    ran["merge-claims"] = _run(tmp_path, "merge-claims", "merge-claims", *claims, "--out", str(tmp_path / "claims.csv"))

    missing = {}
    for job, used in ran.items():
        if job in graph.commands:
            modules, reads = graph.command_modules(job), reference_use.command_reads(job)
        else:
            assert used["error"] is None, f"{job}: {used['error']}"
            modules, reads = (
                graph.script_modules(NOTEBOOKS / f"{job}.py"),
                reference_use.script_reads(NOTEBOOKS / f"{job}.py"),
            )
        unseen = (set(used["modules"]) - modules) | (set(used["reads"]) - {path.name for path in reads})
        if unseen:
            missing[job] = sorted(unseen)
    assert missing == {}
    # The runs were real: the decoder and the qlog reader ran, the scan named CDNs, tables were printed beside ours.
    assert {"quicack.pcap.decode", "quicack.qlog.qlog_file"} <= set(ran["ingest-group"]["modules"])
    assert "quicack.metrics.ack_runs" in ran["derive-group"]["modules"]
    assert ran["scan-part"]["reads"] == ["cdn_asn.csv"]
    assert (
        set(ran["imc24-tab03"]["reads"]) == {"imc24_tab03.csv"} | FOOTNOTE_READS
        and "cdn_asn.csv" in ran["imc24-tab05"]["reads"]
    )
    assert len(statuses) == len(notebooks)


# --- exact: an edit re-runs the jobs that use it


JOB = re.compile(r"^(?:local)?rule (\w+):$")


class TouchedCopy:
    """A copy of the repository (code, rules, notebooks, reference data, the core's sources) run on two embedded run
    groups and one vantage point of the embedded scan, every output present and up to date."""

    def __init__(self, root: Path, data: Path) -> None:
        self.root = root
        self.config = [
            "--config", f"raw_dir={data / 'sample' / 'raw'}", f"scan_dir={data / 'scan' / 'raw'}",
            f"scan_prefix_to_asn={SCAN / 'prefix_asn.csv'}", f"results_dir={root / 'results'}",
            # The run groups are links to the embedded dataset's folders, outside this raw folder: followed on request.
            "follow_external_symlinks=true",
        ]  # fmt: skip

    def snakemake(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        environment = {**os.environ, "PYTHONPATH": str(self.root / "src"), **(env or {})}
        done = subprocess.run(
            [sys.executable, "-m", "snakemake", "--cores", "1", *args, *self.config],
            cwd=self.root,
            env=environment,
            capture_output=True,
            text=True,
            timeout=900,
            encoding="utf-8",
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    def planned(self, env: dict[str, str] | None = None) -> tuple[dict[str, list[tuple[str, set[str]]]], str]:
        """{rule: [(reason, inputs) of each of its jobs]} of a dry run, and what it printed."""
        jobs: dict[str, list[tuple[str, set[str]]]] = {}
        rule, inputs = None, set()
        done = self.snakemake("-n", env=env)
        for line in done.stdout.splitlines():
            if match := JOB.match(line):
                rule, inputs = match[1], set()
            elif rule and line.strip().startswith("input:"):
                inputs = set(line.strip().removeprefix("input: ").split(", "))
            elif rule and line.strip().startswith("reason:"):
                jobs.setdefault(rule, []).append((line.strip().removeprefix("reason: "), inputs))
                rule = None
        return jobs, done.stdout + done.stderr


@pytest.fixture(scope="module")
def touched(tmp_path_factory) -> TouchedCopy:
    root = tmp_path_factory.mktemp("repository")
    for name in (
        "Snakefile",
        "workflow",
        "profiles",
        "config",
        "notebooks",
        "environment.yml",
        "environment.post-deploy.sh",
        "src/quicack",
        "data/reference",
        "rust/quicack_core",
    ):
        source, target = REPO / name, root / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "target", ".*"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    data = tmp_path_factory.mktemp("data")
    (data / "sample" / "raw").mkdir(parents=True)
    for group in ("aioquic_aioquic", "quic-go_aioquic"):
        (data / "sample" / "raw" / group).symlink_to(SAMPLE_RAW.resolve() / group)
    for name in ("dataset.yaml", "path_check.csv"):
        shutil.copy2(SAMPLE_RAW.parent / name, data / "sample" / name)
    (data / "scan" / "raw").mkdir(parents=True)
    (data / "scan" / "raw" / "hamburg").symlink_to(SCAN / "raw" / "hamburg")
    shutil.copy2(SCAN / "dataset.yaml", data / "scan" / "dataset.yaml")
    copy = TouchedCopy(root, data)
    # Every output, empty and older than every input; `--touch` then marks them made in the DAG's order and records
    # each job's metadata (its code, input set and params) as a real run would.
    listing = copy.snakemake("--summary").stdout.splitlines()[1:]
    for output in (Path(line.split("\t")[0]) for line in listing):
        output.parent.mkdir(parents=True, exist_ok=True)
        output.touch()
        os.utime(output, (946684800, 946684800))
    copy.touched = copy.snakemake("--touch")
    return copy


@contextmanager
def edited(path: Path, line: str):
    """`path` with `line` appended, then restored with its content and modification time."""
    text, stat = path.read_bytes(), path.stat()
    path.write_bytes(text + line.encode())
    try:
        yield
    finally:
        path.write_bytes(text)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _triggered(planned: dict[str, list[tuple[str, set[str]]]], path: str) -> dict[str, int]:
    """{rule: jobs} that re-run because `path` changed (not because a job before them re-runs)."""
    return {
        rule: count for rule, jobs in planned.items()
        if (count := sum(bool(re.search(r"Updated input "
                                        rf"files:[^;]*\b{re.escape(path)}\b", reason)) for reason, _ in jobs))
    }  # fmt: skip


# (report_pages reads claims.csv, not the figures: a figure that changes no claim does not rewrite the report pages.)
RENDER_AFTER = {"render_summary", "all"}


@pytest.mark.slow
def test_a_figure_module_or_a_papers_table_rerenders_only_the_notebooks_that_use_it(touched):
    """Two edits at once, each of them to one notebook's inputs only: imc24_ttfb.py (five figures) and imc24's Table 3
    values (its table and imc24's claims, not Tables 2 and 4 drawn by the same module, not the other papers). And a
    third that no job uses: the compiled core's sources, whose installed build is what the jobs run; the run warns once
    that it differs."""
    ttfb, table, core = (
        "src/quicack/figures/imc24_ttfb.py",
        "data/reference/imc24_tab03.csv",
        "rust/quicack_core/src/lib.rs",
    )
    stale = installed_identity() not in (None, source_identity(touched.root / "rust" / "quicack_core"))
    assert (touched.touched.stdout + touched.touched.stderr).count("is not built from") == int(stale)
    with (
        edited(touched.root / ttfb, "# edited\n"),
        edited(touched.root / table, "\n"),
        edited(touched.root / core, "//\n"),
    ):
        planned, output = touched.planned()
    figures = {f"render_imc24_fig{n}" for n in ("05", "06", "07", "12", "13")}
    assert _triggered(planned, ttfb) == dict.fromkeys(figures, 1)
    # Table 3's values are the table's and imc24's claims' (App. D's summary of Table 3): both, nothing else; the
    # claims then merge again and the report's pages follow them.
    assert _triggered(planned, table) == {"render_imc24_tab03": 1, "render_imc24_claims": 1}
    assert (
        set(planned) == figures | {"render_imc24_tab03", "render_imc24_claims", "claims", "report_pages"} | RENDER_AFTER
    )
    assert output.count("is not built from") == int(installed_identity() is not None)


@pytest.mark.slow
def test_a_derive_module_rederives_and_nothing_before(touched):
    """metrics/ack_runs.py: every run group's derive (the hand-typed list left it out), then the database and every
    notebook drawn from it; no ingest, no scan."""
    path = "src/quicack/metrics/ack_runs.py"
    with edited(touched.root / path, "# edited\n"):
        planned, _ = touched.planned()
    assert _triggered(planned, path) == {"derive_group": 2}
    assert not {"ingest_group", "ingest_dataset_issues", "scan_part"} & set(planned)
    assert (
        "database" in planned
        and len([r for r in planned if r.startswith("render_")]) == len(list(NOTEBOOKS.glob("*.py"))) + 1
    )


@pytest.mark.slow
def test_the_path_checks_module_rebuilds_the_database_only(touched):
    path = "src/quicack/storage/path_checks.py"
    with edited(touched.root / path, "# edited\n"):
        planned, _ = touched.planned()
    assert _triggered(planned, path) == {"database": 1}
    assert not {"ingest_group", "derive_group", "scan_part"} & set(planned)


@pytest.mark.slow
def test_the_cdn_map_reruns_the_scan_and_the_notebooks_that_read_it(touched):
    path = "data/reference/cdn_asn.csv"
    with edited(touched.root / path, "\n"):
        planned, _ = touched.planned()
    assert _triggered(planned, path) == {"scan_part": 4}
    assert not {"ingest_group", "derive_group"} & set(planned)
    # Every notebook re-runs after the database; those that read the map themselves have it among their inputs.
    readers = {rule for rule, jobs in planned.items() if any(path in inputs for _, inputs in jobs)}
    assert readers == {"scan_part"} | {
        f"render_imc24_{a}" for a in ("fig08", "fig10", "fig14", "tab01", "tab05", "scan_claims")
    }


@pytest.mark.slow
def test_a_decoder_module_or_another_core_build_reingests(touched):
    """pcap/frames.py: every run group's ingest and every scan part (the scan decodes its capture), not the derive's
    own code. The compiled core's identity is a parameter of the same jobs: another engine re-runs them."""
    path = "src/quicack/pcap/frames.py"
    with edited(touched.root / path, "# edited\n"):
        planned, _ = touched.planned()
    assert _triggered(planned, path) == {"ingest_group": 2, "ingest_dataset_issues": 1, "scan_part": 4}
    pytest.importorskip("quicack_core", reason="the other engine than the pure-Python one needs quicack_core")
    planned, _ = touched.planned(env={"QUICACK_PCAP_ENGINE": "python"})
    params = {
        rule: len(jobs) for rule, jobs in planned.items() if all("Params have changed" in reason for reason, _ in jobs)
    }
    assert params == {"ingest_group": 2, "ingest_dataset_issues": 1, "scan_part": 4}


