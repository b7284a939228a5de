"""Every text file the project reads or writes is UTF-8 whatever the locale: each text-mode open names its
encoding (ruff's PLW1514 checks the calls whose receiver it can type; this test also sees ``x.read_text()`` on any
receiver, subprocess text decoding, temporary files, the notebooks and the Snakemake rules), and a small pipeline
under a Latin-1 locale gives byte-identical outputs to one under UTF-8 elsewhere, in a folder whose name has a
space and a non-ASCII letter."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import snakemake.parser

from tests.conftest import REPO, UNLOCKED, config_for, published

PYTHON_FOLDERS = ("src/quicack", "workflow", "notebooks", "bench", "tests")
SNAKEMAKE_FILES = (REPO / "Snakefile", *sorted((REPO / "workflow").rglob("*.smk")))
# Modules whose ``open(file, mode)`` takes the mode second and is binary unless "t" is asked for.
BINARY_BY_DEFAULT = {"gzip", "bz2", "lzma"}
# Receivers whose ``.open`` is no file-system text open (or takes no encoding).
NOT_TEXT_OPEN = {"os", "tarfile", "zipfile", "webbrowser", "duckdb", "codecs"}
MODE = re.compile(r"[rwxabt+]*")
SUBPROCESS_TEXT = {"run", "check_output", "Popen", "call", "check_call"}
TEMPORARY_FILES = {"NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile"}


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _names_encoding(call: ast.Call) -> bool:
    return any(k.arg in ("encoding", None) for k in call.keywords)  # None: **kwargs passes it on


def _text_mode(mode: ast.expr | None, default_text: bool) -> bool:
    """Whether the mode opens a text file (a mode that is not a literal counts as text: say the encoding)."""
    if mode is None:
        return default_text
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return "b" not in mode.value and (default_text or "t" in mode.value)
    return True


def _is_true(node: ast.expr | None) -> bool:
    return node is not None and not (isinstance(node, ast.Constant) and not node.value)


def unnamed_encoding(call: ast.Call) -> str | None:
    """What ``call`` opens or decodes as text without naming the encoding (None when it is fine)."""
    if _names_encoding(call):
        return None
    func = call.func
    receiver = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if isinstance(func, ast.Name) and name == "open" or receiver == "io" and name == "open":
        mode = call.args[1] if len(call.args) > 1 else _keyword(call, "mode")
        return "open" if _text_mode(mode, default_text=True) else None
    if name in ("read_text", "write_text"):
        return name
    if name == "open" and receiver in BINARY_BY_DEFAULT:
        mode = call.args[1] if len(call.args) > 1 else _keyword(call, "mode")
        return f"{receiver}.open" if _text_mode(mode, default_text=False) else None
    if name == "open" and receiver not in NOT_TEXT_OPEN:  # pathlib's Path.open(mode)
        mode = call.args[0] if call.args else _keyword(call, "mode")
        literal = isinstance(mode, ast.Constant) and isinstance(mode.value, str) and MODE.fullmatch(mode.value)
        if mode is None or literal:
            return ".open" if _text_mode(mode, default_text=True) else None
        return None
    if name in SUBPROCESS_TEXT and (receiver == "subprocess" or isinstance(func, ast.Name)):
        if _is_true(_keyword(call, "text")) or _is_true(_keyword(call, "universal_newlines")):
            return f"subprocess.{name}(text=True)"
        return None
    if name in TEMPORARY_FILES:
        mode = call.args[0] if call.args else _keyword(call, "mode")
        return name if mode is not None and _text_mode(mode, default_text=True) else None
    if name == "TextIOWrapper":
        return name
    return None


def snakemake_as_python(path: Path) -> str:
    """The Python that Snakemake compiles a Snakefile or rule file into (its own parser)."""
    source = SimpleNamespace(get_path_or_uri=lambda secret_free=True: str(path))
    workflow = SimpleNamespace(sourcecache=SimpleNamespace(open=lambda _: path.open(encoding="utf-8")))
    return snakemake.parser.parse(source, workflow, {})[0]


def python_files() -> list[Path]:
    return sorted(p for folder in PYTHON_FOLDERS for p in (REPO / folder).rglob("*.py"))


def test_every_text_open_names_its_encoding():
    sources = [(p, p.read_text(encoding="utf-8")) for p in python_files()]
    sources += [(p, snakemake_as_python(p)) for p in SNAKEMAKE_FILES]
    unnamed = [
        f"{path.relative_to(REPO)}:{node.lineno}: {what}"
        for path, text in sources
        for node in ast.walk(ast.parse(text, str(path)))
        if isinstance(node, ast.Call) and (what := unnamed_encoding(node))
    ]
    assert len(sources) > 200
    assert unnamed == []


@pytest.mark.parametrize(
    ("code", "unnamed"),
    [
        ("open(p)", "open"),
        ("open(p, 'w')", "open"),
        ("open(p, 'rb')", None),
        ("open(p, encoding='utf-8')", None),
        ("p.read_text()", "read_text"),
        ("p.write_text(t, encoding='utf-8')", None),
        ("p.open('a', newline='')", ".open"),
        ("p.open('rb')", None),
        ("p.open()", ".open"),
        ("session.open(ciphertext, header)", None),
        ("gzip.open(p, 'rt')", "gzip.open"),
        ("gzip.open(p)", None),
        ("tarfile.open(fileobj=f, mode='r|')", None),
        ("subprocess.run(a, text=True)", "subprocess.run(text=True)"),
        ("subprocess.run(a, capture_output=True)", None),
        ("subprocess.run(a, text=True, encoding='utf-8')", None),
        ("tempfile.NamedTemporaryFile('w')", "NamedTemporaryFile"),
        ("tempfile.NamedTemporaryFile()", None),
    ],
)
def test_the_encoding_check_sees_each_kind_of_text_open(code, unnamed):
    call = ast.parse(code).body[0].value
    assert unnamed_encoding(call) == unnamed


SAMPLE_GROUP = REPO / "data" / "sample" / "raw" / "aioquic_aioquic"
# One artefact whose footnote holds an em dash and the dataset's description (data/sample/dataset.yaml holds "Δ").
TABLE = "imc24-tab03"
COMPARED = ("summary.txt", "ingest_issues.csv", f"tables/{TABLE}.md", f"tables/{TABLE}.csv", f"tables/{TABLE}.tex")


def latin1_locale(tmp_path: Path) -> dict[str, str]:
    """The environment of a Latin-1 locale (compiled into ``tmp_path``: no system locale needed); where localedef
    cannot make it, the C locale without Python's UTF-8 mode and locale coercion (ASCII: as unforgiving)."""
    locales = tmp_path / "locales"
    locales.mkdir()
    made = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(locales / "en_US.ISO-8859-1")],
                          capture_output=True) if shutil.which("localedef") else None  # fmt: skip
    if made is not None and made.returncode == 0:
        return {"LOCPATH": str(locales), "LC_ALL": "en_US.ISO-8859-1", "LANG": "en_US.ISO-8859-1"}
    return {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0"}


def small_dataset(base: Path) -> Path:
    """A real run group of the embedded dataset with its description, and one qlog cut while being written
    (hand-made: an ingest issue whose message names its file)."""
    raw = base / "raw"
    shutil.copytree(SAMPLE_GROUP, raw / SAMPLE_GROUP.name)
    shutil.copy(REPO / "data" / "sample" / "dataset.yaml", base / "dataset.yaml")
    cut = raw / SAMPLE_GROUP.name / "handshake-none-rtt30ms-10KB-h3" / "9" / "client" / "qlog"
    cut.mkdir(parents=True)
    (cut / "cut.qlog").write_text('{"qlog_version": "0.3", "traces": [{"events": [', encoding="utf-8")
    return raw


def pipeline(base: Path, environment: dict[str, str]) -> Path:
    raw, results = small_dataset(base), base / "results"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUTF8", "PYTHONIOENCODING", "LC_ALL", "LANG")}
    done = subprocess.run(
        ["snakemake", "--cores", "2", UNLOCKED, published(results / "t" / "quicack.duckdb"),
         str(results / "t" / "tables" / f"{TABLE}.md"), *config_for(raw, results)],
        cwd=REPO, capture_output=True, encoding="utf-8", errors="replace", timeout=600, env=env | environment,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return results / "t"


def test_a_latin1_locale_and_another_place_give_byte_identical_outputs(tmp_path):
    """Before: under Latin-1 the project's own dataset.yaml was refused ("not valid YAML (unacceptable character
    #x0094") and the issue messages named the absolute path of the file (and split into one cause per file when that
    path held a space)."""
    reference = pipeline(tmp_path / "dossier é x", {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"})
    # ASCII here: under a Latin-1 locale Python takes "é" in a path for two Latin-1 letters, which Polars and DuckDB
    # then write as UTF-8 (another path); non-ASCII folder names need a UTF-8 locale.
    moved = pipeline(tmp_path / "other place", latin1_locale(tmp_path))
    for name in COMPARED:
        assert (moved / name).read_bytes() == (reference / name).read_bytes(), name
    summary = (reference / "summary.txt").read_text(encoding="utf-8")
    assert "1 cause(s)" in summary and str(tmp_path) not in summary
    assert (
        "e.g. aioquic_aioquic/handshake-none-rtt30ms-10KB-h3/9/client/qlog/cut.qlog: JSON document damaged" in summary
    )
    assert (
        (reference / "tables" / f"{TABLE}.md")
        .read_text(encoding="utf-8")
        .splitlines()[-1]
        .startswith("EMULATED DATA — ")
    )


def test_quicack_prints_utf8_under_a_latin1_locale(tmp_path):
    """A query's table (box-drawing characters) and an em dash (the query ASCII: the locale decodes the arguments,
    rightly). Before: UnicodeEncodeError ('latin-1' codec can't
    encode characters), whatever the query."""
    import duckdb

    db = tmp_path / "empty.duckdb"
    duckdb.connect(str(db)).close()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUTF8", "PYTHONIOENCODING", "LC_ALL", "LANG")}
    done = subprocess.run(["quicack", "sql", "--db", str(db),
                           "SELECT 'EMULATED DATA ' || chr(8212) || ' t' AS footnote"],
                          capture_output=True, timeout=120, env=env | latin1_locale(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert "│ EMULATED DATA — t │" in done.stdout.decode("utf-8")
