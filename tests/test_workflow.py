"""The Snakemake workflow end to end on real recorded data: database, comments, README queries,
idempotence, determinism, strict mode, and the default pipeline on the embedded dataset."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest

from quicack.database import connect
from quicack.schema import TABLES
from tests.conftest import QLOG_FIXTURES, REPO, make_run, snakemake

LOOPBACK = REPO / "tests" / "data" / "loopback"


def published(db: Path) -> str:
    """The Snakemake target that builds the database ``db``: its receipt (the rule never declares the database
    itself, which Snakemake would remove before rebuilding it)."""
    return f"{db}.published"


def config_for(raw: Path, results: Path, *extra: str) -> list[str]:
    return ["--config", "dataset=t", f"raw_dir={raw}", f"results_dir={results}", *extra]


def readme_queries() -> list[str]:
    text = (REPO / "README.md").read_text()
    return re.findall(r"```sql\n(.*?)```", text, flags=re.S)


def test_database_has_every_table_commented_and_readme_queries_return_rows(real_raw, tmp_path):
    # a third run with a capture, for the queries over capture tables (ack_breakdown, frames from pcap)
    shutil.copytree(LOOPBACK / "ngtcp2_ngtcp2" / "transfer_10KB" / "1", real_raw / "ngtcp2_ngtcp2" / "transfer_10KB" / "1")
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    done = snakemake(published(db), *config_for(real_raw, results))
    assert done.returncode == 0, done.stderr[-3000:]
    with connect(db) as con:
        views = dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
        assert set(views) == set(TABLES)
        assert all(views.values())
        uncommented = con.execute(
            "SELECT table_name, column_name FROM duckdb_columns() WHERE NOT internal AND (comment IS NULL OR comment = '')"
        ).fetchall()
        assert uncommented == []
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 3
        assert con.execute("SELECT count(DISTINCT vantage) FROM rtt_samples").fetchone()[0] == 2
        queries = readme_queries()
        assert len(queries) >= 3
        for query in queries[1:]:  # the first lists ingest issues, which this clean input has none of
            assert con.execute(query).fetchall(), query
    summary = (results / "t" / "summary.txt").read_text()
    assert "runs: 3 (3 ok" in summary

    again = snakemake(published(db), *config_for(real_raw, results))
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_ingest_is_deterministic(real_raw, tmp_path):
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"

    def digests():
        # The working Parquet set; the database reads hard links of it (results/t/snapshots/<id>/).
        parquet = results / "t" / "parquet"
        return {p.relative_to(parquet): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(parquet.rglob("*.parquet"))}

    assert snakemake(published(db), *config_for(real_raw, results)).returncode == 0
    first = digests()
    assert snakemake(published(db), "--forceall", *config_for(real_raw, results)).returncode == 0
    assert digests() == first


def test_malformed_input_is_reported_and_strict_mode_fails(real_raw, tmp_path):
    broken = real_raw / "aioquic_aioquic" / "transfer" / "2" / "client" / "qlog"
    broken.mkdir(parents=True)
    (broken / "broken.qlog").write_text('{"qlog_version": "0.3", "traces": [{"events": [')  # hand-made, cut
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    lenient = snakemake(published(db), *config_for(real_raw, results))
    assert lenient.returncode == 0, lenient.stderr[-2000:]
    with connect(db) as con:
        rows = con.execute("SELECT path, stage FROM ingest_issues WHERE path LIKE '%broken.qlog'").fetchall()
    assert rows and rows[0][1] == "qlog"
    shutil.rmtree(results)
    # The README's spelling: the config schema takes what users type (true/false, yes/no, on/off, 1/0), and the
    # run fails for the ingest issue, not for the spelling.
    strict = snakemake(published(db), *config_for(real_raw, results, "strict=true"))
    assert strict.returncode != 0
    assert "ValidationError" not in strict.stderr, strict.stderr[-2000:]
    assert "strict mode: 1 ingest issue(s); failing" in (results / "t" / "logs" / "database.log").read_text()
    assert not db.exists()


@pytest.mark.slow
def test_default_pipeline_on_the_embedded_dataset(tmp_path):
    """README command 1, with the results in a temporary folder: database, figures, report inputs."""
    results = tmp_path / "results"
    done = snakemake("--config", f"results_dir={results}")
    assert done.returncode == 0, done.stderr[-3000:]
    out = results / "sample"
    artefacts = sorted(p.stem for p in (REPO / "notebooks").glob("*.py"))
    assert {"imc24-fig02", "imc24-fig04", "imc24-fig04-measured", "imc24-claims"} <= set(artefacts)
    # Every artefact is drawn from the embedded data (the measured sweet spot from its Δt sweep included).
    assert f"artefacts: {len(artefacts)} ({len(artefacts)} drawn, 0 not drawn)" in (out / "rendering.txt").read_text()
    for artefact in artefacts:
        if "-fig" in artefact:
            for fmt in ("pdf", "png"):
                assert (out / "figures" / f"{artefact}.{fmt}").stat().st_size > 1000, artefact
        else:
            for fmt in ("csv", "md", "tex"):
                assert (out / "tables" / f"{artefact}.{fmt}").stat().st_size > 100, artefact
    # Footnotes take their words from the dataset's description (data/sample/dataset.yaml), stored in the database.
    assert (out / "tables" / "imc24-tab03.md").read_text().splitlines()[-1].startswith("EMULATED DATA — dataset 'sample': ")
    with duckdb.connect(str(out / "quicack.duckdb"), read_only=True) as con:
        assert con.execute("SELECT part, name, kind FROM dataset_description ORDER BY part").fetchall() == [
            ("runs", "sample", "emulated"),
            ("scan", "scan", "emulated-scan"),
        ]
    # The scan artefacts say that they are drawn from the emulated scan, not from the testbed runs.
    assert (out / "tables" / "imc24-tab01.md").read_text().splitlines()[-1].startswith("EMULATED SCAN DATA — dataset 'scan': ")
    # Every claim where the embedded data differs from the paper says why.
    claims = pl.read_csv(out / "claims.csv", infer_schema_length=None)
    differing = claims.filter(pl.col("agrees") == False)  # noqa: E712 (null: no number to compare)
    assert differing.filter(pl.col("explanation").fill_null("").str.strip_chars() == "").is_empty(), differing["claim_id"].to_list()
    with duckdb.connect(str(out / "quicack.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()[0] == len(TABLES)
    report = tmp_path / "report.html"
    made = snakemake("--report", str(report), "--config", f"results_dir={results}")
    assert made.returncode == 0, made.stderr[-2000:]
    html = report.read_text(errors="replace")
    assert "imc24-fig02" in html and "numerical sweet spot" in html
    # Every rendered artefact is in the report with its caption, tables and claims included.
    for artefact in artefacts:
        assert artefact in html, artefact
    assert "claims.csv" in html and "EMULATED DATA" in html
    # The landing page is the claims overview of this run; each claim is listed, each caption names its claims.
    assert "Claims overview" in html and all(claim_id in html for claim_id in claims["claim_id"].to_list())
    assert (out / "claims_overview.md").read_text().count("\n| `") == claims.height
    # ARTIFACT.md's claims section is what this run's claims.csv gives (quicack artifact-claims rewrites it).
    checked = subprocess.run([sys.executable, "-m", "quicack.cli", "artifact-claims", str(out / "claims.csv"), "--check"],
                             cwd=REPO, capture_output=True, text=True)  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    # The summary groups the issues by cause; every row is in ingest_issues.csv.
    issues = pl.read_csv(out / "ingest_issues.csv")
    with duckdb.connect(str(out / "quicack.duckdb"), read_only=True) as con:
        assert issues.height == con.execute("SELECT count(*) FROM ingest_issues").fetchone()[0]
    causes = issues.select("severity", "stage", "cause").unique().height
    assert f"{causes} cause(s); every row: ingest_issues.csv" in (out / "summary.txt").read_text()


def test_duckdb_cli_opens_the_database_from_the_repository_root(real_raw, tmp_path):
    cli = shutil.which("duckdb")
    if cli is None:
        pytest.skip("DuckDB CLI not installed (pip install duckdb-cli)")
    results = REPO / "results" / "_test_cli"
    try:
        db = results / "t" / "quicack.duckdb"
        assert snakemake(published(db.relative_to(REPO)), *config_for(real_raw, results.relative_to(REPO))).returncode == 0
        out = subprocess.run(
            [cli, "-readonly", "-csv", str(db.relative_to(REPO)), "-c", "SELECT count(*) AS n FROM packets"],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert int(out.stdout.splitlines()[-1]) > 0
    finally:
        shutil.rmtree(results, ignore_errors=True)


def test_qlog_command_writes_tables_and_fails_only_when_nothing_is_readable(tmp_path):
    ok = subprocess.run(
        ["quicack", "qlog", str(QLOG_FIXTURES / "ngtcp2"), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert len(ok.stdout.strip().splitlines()) == 2  # one summary line per file
    for table in ("packets", "frames", "metrics_logged", "endpoints", "ingest_issues", "rtt_samples"):
        assert (tmp_path / "out" / f"{table}.parquet").exists()
    garbage = tmp_path / "garbage.qlog"
    garbage.write_bytes(b"\x00\x01 not a qlog")  # hand-made malformed input
    bad = subprocess.run(["quicack", "qlog", str(garbage), "--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert bad.returncode == 1


def test_any_group_folder_name_is_ingested(tmp_path):
    """Folder names with wildcard braces, glob characters, a leading '-' and a newline (hand-made names: no
    recorder writes them, but a file system allows them) reach the database unchanged; nothing is injected."""
    raw = tmp_path / "raw"
    names = ["a{group}_x", "-leading_x", "glob*[?]_x", "new\nline_x"]
    for name in names:
        make_run(raw, f"{name}/transfer/1", QLOG_FIXTURES / "ngtcp2" / "client.sqlog", QLOG_FIXTURES / "ngtcp2" / "server.sqlog",
                 {"status": "ok", "repetition": 1})
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    done = snakemake(published(db), *config_for(raw, results))
    assert done.returncode == 0, done.stderr[-3000:]
    with connect(db) as con:
        run_ids = sorted(r[0] for r in con.execute("SELECT run_id FROM runs").fetchall())
        packets = con.execute("SELECT count(DISTINCT run_id) FROM packets").fetchone()[0]
    assert run_ids == sorted(f"{name}/transfer/1" for name in names)
    assert packets == 4


@pytest.mark.parametrize("dataset", ["..", ".", "a/b", ".hidden"])
def test_dataset_must_be_a_name_not_a_path(tmp_path, dataset):
    done = snakemake("-n", "--config", f"dataset={dataset}", f"results_dir={tmp_path}")
    assert done.returncode != 0 and "dataset" in done.stdout + done.stderr


def test_run_from_another_directory_keeps_every_render_job(tmp_path):
    """-s <repo>/Snakefile with the user's own --configfile from elsewhere: the same jobs as at home."""
    config = tmp_path / "mine.yaml"
    config.write_text(f"dataset: sample\nraw_dir: {REPO / 'data/sample/raw'}\nresults_dir: {tmp_path / 'results'}\n")
    done = subprocess.run(
        ["snakemake", "-s", str(REPO / "Snakefile"), "--configfile", str(config), "-n", "--cores", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    jobs = set(re.findall(r"^(\w+)\s+\d+$", done.stdout, flags=re.M))
    notebooks = {f"render_{p.stem.replace('-', '_')}" for p in (REPO / "notebooks").glob("*.py")}
    assert notebooks and notebooks <= jobs and {"ingest_group", "database", "claims"} <= jobs


def runs_in(db: Path) -> list[str]:
    with connect(db) as con:
        return sorted(r[0] for r in con.execute("SELECT run_id FROM runs").fetchall())


def test_removed_and_renamed_groups_leave_every_output(real_raw, tmp_path):
    """Results follow the dataset: a removed group's runs disappear, a renamed group counts once."""
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    assert snakemake(published(db), *config_for(real_raw, results)).returncode == 0
    assert runs_in(db) == ["aioquic_aioquic/transfer/1", "ngtcp2_ngtcp2/transfer/1"]

    shutil.rmtree(real_raw / "ngtcp2_ngtcp2")
    done = snakemake(published(db), *config_for(real_raw, results))
    assert done.returncode == 0, done.stderr[-2000:]
    assert runs_in(db) == ["aioquic_aioquic/transfer/1"]
    assert "runs: 1 (1 ok" in (results / "t" / "summary.txt").read_text()
    assert not list((results / "t" / "parquet").rglob("ngtcp2_ngtcp2.parquet"))

    (real_raw / "aioquic_aioquic").rename(real_raw / "aioquic_aioquic-renamed")
    done = snakemake(published(db), *config_for(real_raw, results))
    assert done.returncode == 0, done.stderr[-2000:]
    assert runs_in(db) == ["aioquic_aioquic-renamed/transfer/1"]
    assert "runs: 1 (1 ok" in (results / "t" / "summary.txt").read_text()


def test_a_reader_during_a_rebuild_sees_the_old_dataset_or_the_new_one(real_raw, tmp_path):
    """The database is renamed into place and its views name a snapshot of the Parquet set: a connection
    opened before a rebuild keeps answering from the old dataset while the rebuild replaces every file."""
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    assert snakemake(published(db), *config_for(real_raw, results)).returncode == 0
    old = connect(db)
    before = old.execute("SELECT count(*), (SELECT count(*) FROM packets) FROM runs").fetchone()
    # The rebuild rewrites the aioquic group's files in place of the old ones (one more run in it).
    shutil.copytree(real_raw / "aioquic_aioquic/transfer/1", real_raw / "aioquic_aioquic/transfer/2")
    assert snakemake(published(db), *config_for(real_raw, results)).returncode == 0
    assert old.execute("SELECT count(*), (SELECT count(*) FROM packets) FROM runs").fetchone() == before
    old.close()
    assert len(runs_in(db)) == 3


# A user querying the database in a loop, in a process of its own, while the workflow rebuilds it.
QUERY_LOOP = """
import json, sys, time
from pathlib import Path
from quicack.database import connect
db, stop = Path(sys.argv[1]), Path(sys.argv[2])
answered, failures, seen = 0, [], set()
while not stop.exists():
    try:
        with connect(db) as con:
            seen.add(con.execute("SELECT count(*) FROM runs").fetchone()[0])
        answered += 1
    except Exception as error:
        failures.append(f"{type(error).__name__}: {error}")
    time.sleep(0.01)
print(json.dumps({"answered": answered, "failures": failures[:3], "failed": len(failures), "seen": sorted(seen)}))
"""


def test_queries_in_a_loop_during_a_rebuild_never_fail(real_raw, tmp_path):
    """A rebuild forced by new content (a run added): queries from another process answer from the old dataset or
    the new one all along; none finds no database (Snakemake removed the declared database before rebuilding it:
    120 of 306 such queries failed)."""
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    assert snakemake(published(db), *config_for(real_raw, results)).returncode == 0
    stop = tmp_path / "stop"
    loop = subprocess.Popen([sys.executable, "-c", QUERY_LOOP, str(db), str(stop)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        shutil.copytree(real_raw / "aioquic_aioquic/transfer/1", real_raw / "aioquic_aioquic/transfer/2")
        rebuilt = snakemake(published(db), *config_for(real_raw, results))
        assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
        assert "rule database:" in rebuilt.stdout + rebuilt.stderr
    finally:
        stop.touch()
        out, err = loop.communicate(timeout=120)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["failed"] == 0, result["failures"] + [err]
    assert result["answered"] > 10 and result["seen"] == [2, 3]


def test_a_rebuild_killed_while_building_the_database_leaves_the_old_one(real_raw, tmp_path):
    """The workflow killed (SIGKILL, the whole process group) while build-db writes the new database: the old one
    answers, and the next run publishes the new one."""
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    config = config_for(real_raw, results)
    assert snakemake(published(db), *config).returncode == 0
    shutil.copytree(real_raw / "aioquic_aioquic/transfer/1", real_raw / "aioquic_aioquic/transfer/2")
    building = db.with_name(db.name + ".building")
    run = subprocess.Popen(["snakemake", "--cores", "2", published(db), *config], cwd=REPO, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while not building.exists() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert building.exists(), "the kill should land while build-db writes the new database"
    assert runs_in(db) == ["aioquic_aioquic/transfer/1", "ngtcp2_ngtcp2/transfer/1"]
    assert snakemake("--unlock", *config).returncode == 0
    again = snakemake(published(db), *config)
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(runs_in(db)) == 3 and not building.exists()


QIR_AS_FOUND = REPO / "tests" / "data" / "qir_as_found"


def test_a_handshake_only_dataset_renders_what_it_can_and_says_what_not(tmp_path):
    """The QIR captures as the imc24 artifact publishes them (fixture: recorded runs in that layout): Table 3 is
    drawn, every artefact that needs another scenario is a placeholder saying what is missing, the run
    succeeds, and rendering.txt lists what could not be drawn; strict mode fails on it."""
    results = tmp_path / "results"
    done = snakemake("--config", "dataset=qir", f"raw_dir={QIR_AS_FOUND / 'all-interop-servers'}", f"results_dir={results}", "scan_dir=")
    assert done.returncode == 0, done.stderr[-3000:]
    out = results / "qir"
    rendering = (out / "rendering.txt").read_text()
    # 16 imc24 testbed artefacts (6 drawn; imc24-fig04-measured needs the Δt sweep) + the ACK-ratio formula tables
    # and claims (8, drawn) + ackfreq22-tab02 (not drawn) + 6 scan artefacts (no scan: placeholders), Table 5 (the
    # CDN → AS mapping, drawn) and the scan claims (drawn, every claim unmeasured) + the 8 measured rethink / tcpquic
    # artefacts (no rethink-satellite runs: placeholders) + the 8 measured ackfreq22 artefacts (no ackfreq22 path profile) + the
    # ACK-ratio senders' table (no long download: placeholder)
    assert "artefacts: 50 (16 drawn, 34 not drawn)" in rendering
    assert "ackfreq22-tab04: the dataset has no ok run of the 1 MB downloads over the emulated ackfreq22 paths" in rendering
    assert "imc24-fig08: the dataset has no scan (config scan_dir)" in rendering
    assert "ackfreq22-tab02: the dataset has no ok run transferring at least 1 MB with the client's default ACK policy" in rendering
    assert "imc24-fig05: the dataset has no ok run with ttfb_capture_ms of scenario 'amplification' at RTT 9 ms" in rendering
    assert "imc24-fig04-measured: the dataset has no ok run of the Δt sweep" in rendering
    assert "imc24-tab03" not in rendering
    table3 = pl.read_csv(out / "tables" / "imc24-tab03.csv", infer_schema=False)
    assert table3.filter(pl.col("server") == "quinn").select("initial_1", "initial_3").row(0) == ("0.4", "no run")
    footnote = (out / "tables" / "imc24-tab03.md").read_text().splitlines()[-1]
    assert footnote.startswith("EMULATED DATA — dataset 'qir-as-found'")  # from tests/data/qir_as_found/dataset.yaml
    assert (out / "figures" / "imc24-fig05.png").stat().st_size > 0
    statuses = sorted(str(p) for p in out.rglob("*.status.json"))
    strict = subprocess.run(["quicack", "render-summary", *statuses, "--out", str(tmp_path / "r.txt"), "--strict"],
                            capture_output=True, text=True)
    assert strict.returncode != 0 and "34 artefact(s) could not be drawn" in strict.stderr


SAMPLE_RAW = REPO / "data" / "sample" / "raw"
# Hand-made: what an attacker would link to (a stand-in for /etc/passwd, outside the raw folder).
SECRET = b"root:x:0:0:root:/root:/bin/bash\n"


def _issues_by_path(db: Path) -> dict[str, list[tuple[str, str]]]:
    with connect(db) as con:
        rows = con.execute("SELECT path, severity, message FROM ingest_issues ORDER BY ALL").fetchall()
    issues: dict[str, list[tuple[str, str]]] = {}
    for path, severity, message in rows:
        issues.setdefault(path, []).append((severity, message))
    return issues


def test_links_and_hidden_groups_in_the_raw_folder_count_once_and_are_reported(tmp_path):
    """A copy of two embedded run groups with what a careless or hostile raw folder holds: a folder link inside a
    group (`latest -> 1`), a loop (`client/loop -> ..`), a link to a group (`alias -> aioquic_aioquic`), a hidden run
    group, a .git folder, a group and files linked from outside the raw folder. Every run counts once, nothing is
    dropped without a row, nothing outside the raw folder is read unless configured, and a rejected file's content
    never reaches ingest_issues or summary.txt."""
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_RAW / "aioquic_aioquic", raw / "aioquic_aioquic")
    shutil.copytree(SAMPLE_RAW / "ngtcp2_aioquic", raw / ".ngtcp2_aioquic")  # a hidden run group
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(SAMPLE_RAW / "ngtcp2_aioquic", elsewhere / "ngtcp2_aioquic")
    (elsewhere / "secret.txt").write_bytes(SECRET)
    (raw / ".git").mkdir()
    (raw / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (raw / "alias").symlink_to("aioquic_aioquic", target_is_directory=True)
    (raw / "outside").symlink_to(elsewhere / "ngtcp2_aioquic", target_is_directory=True)
    (raw / "gone").symlink_to(tmp_path / "nowhere", target_is_directory=True)
    (testcase,) = [p for p in (raw / "aioquic_aioquic").iterdir() if p.is_dir()]
    (testcase / "latest").symlink_to("1", target_is_directory=True)
    (testcase / "1" / "client" / "loop").symlink_to("..", target_is_directory=True)
    (testcase / "1" / "sim" / "stolen.pcap").symlink_to(elsewhere / "secret.txt")
    (testcase / "2" / "client" / "qlog" / "stolen.qlog").symlink_to(elsewhere / "secret.txt")
    (testcase / "3" / "dangling.pcap").symlink_to(tmp_path / "nothing")
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    done = snakemake(published(db), *config_for(raw, results))
    assert done.returncode == 0, done.stderr[-3000:]
    embedded_runs = sorted(p.relative_to(SAMPLE_RAW).as_posix() for g in ("aioquic_aioquic", "ngtcp2_aioquic")
                           for p in (SAMPLE_RAW / g).glob("*/*") if p.is_dir())
    assert runs_in(db) == sorted(r.replace("ngtcp2_aioquic", ".ngtcp2_aioquic") for r in embedded_runs)
    issues = _issues_by_path(db)
    rel = testcase.relative_to(raw).as_posix()
    ((severity, message),) = issues[f"{rel}/latest"]
    assert severity == "warning" and "not followed" in message
    assert [severity for severity, _ in issues[f"{rel}/1/client/loop"]] == ["warning"]
    ((severity, message),) = issues["alias"]
    assert severity == "warning" and "not a run group" in message
    ((severity, message),) = issues[".git"]
    assert severity == "warning" and "hidden folder" in message
    ((severity, message),) = issues["outside"]
    assert severity == "error" and "outside the raw folder" in message
    ((severity, message),) = issues[f"{rel}/1/sim/stolen.pcap"]
    assert severity == "error" and "outside the raw folder" in message
    assert [severity for severity, _ in issues[f"{rel}/2/client/qlog/stolen.qlog"]] == ["error"]
    assert issues[f"{rel}/3/dangling.pcap"] == issues["gone"] == [("warning", "symbolic link to nothing: ignored")]
    summary = (results / "t" / "summary.txt").read_text()
    assert "stolen.pcap" in summary and "outside the raw folder" in summary

    # Configured to follow links out of the raw folder: the linked group is read, the linked files are read and
    # rejected as what they are, named with the reason and without their content.
    done = snakemake(published(db), *config_for(raw, results, "follow_external_symlinks=true"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(runs_in(db)) == len(embedded_runs) + len(list((elsewhere / "ngtcp2_aioquic").glob("*/*/run.json")))
    issues = _issues_by_path(db)
    assert "outside" not in issues
    assert any("not a pcap or pcapng file" in message for _, message in issues[f"{rel}/1/sim/stolen.pcap"])
    assert any("not a qlog file" in message for _, message in issues[f"{rel}/2/client/qlog/stolen.qlog"])
    summary = (results / "t" / "summary.txt").read_text()
    shown = [SECRET[:4].hex(), SECRET[:16].hex(" "), "root:x"]
    for text in [summary, *(message for rows in issues.values() for _, message in rows)]:
        assert not any(secret in text for secret in shown), text


SUBSET_GROUPS = ("aioquic_aioquic", "ngtcp2_aioquic", "quiche_ngtcp2")
# Hand-made hostile description (a dataset.yaml is the user's text): a line break before a LaTeX command, and a
# mathtext fragment that does not parse.
HOSTILE_DESCRIPTION = """name: subset
kind: other
title: "Three groups of the embedded runs\\n\\\\input{/etc/passwd} at $\\\\frac{1}{$ each"
"""


def test_a_subset_with_a_hostile_title_renders_and_a_failed_artefact_still_leaves_rendering_txt(tmp_path):
    """Three embedded run groups (the handshake test case of two servers, quiche's ACK-ratio runs to ngtcp2): imc24
    Fig. 3 finds no captured handshake there and is a placeholder saying so; the title's LaTeX and mathtext stay
    text; and when one artefact's notebook fails, rendering.txt still says what was drawn and what failed."""
    raw = tmp_path / "data" / "raw"
    for group in SUBSET_GROUPS:
        shutil.copytree(SAMPLE_RAW / group, raw / group)
    (raw.parent / "dataset.yaml").write_text(HOSTILE_DESCRIPTION)
    results = tmp_path / "results"
    out = results / "t"
    config = config_for(raw, results, "scan_dir=")
    notebooks = [str(out / "notebooks" / f"{a}.ipynb") for a in ("imc24-fig03", "imc24-tab03")]
    done = snakemake(published(out / "quicack.duckdb"), *notebooks, *config)
    assert done.returncode == 0, done.stderr[-3000:]
    status = json.loads((out / "figures" / "imc24-fig03.status.json").read_text())
    assert not status["rendered"] and "no ok run of scenario 'noloss'" in status["missing"]
    assert all((out / "figures" / f"imc24-fig03.{fmt}").stat().st_size > 1000 for fmt in ("pdf", "png"))
    tex = (out / "tables" / "imc24-tab03.tex").read_text()
    assert not [line for line in tex.splitlines() if "\\input" in line and not line.startswith("%")], tex
    assert tex.splitlines()[-1].startswith("% Dataset 'subset': Three groups of the embedded runs \\input{/etc/passwd}")

    # One artefact fails (its published Parquet damaged: hand-made), the others were drawn: rendering.txt says so.
    (snapshot,) = (out / "snapshots").iterdir()
    for part in (snapshot / "handshake_runs").glob("*.parquet"):
        part.unlink()  # a new file, not the hard-linked working one: the workflow sees no change
        part.write_bytes(b"not parquet")
    failed = snakemake(str(out / "notebooks" / "imc24-tab04.ipynb"), *config)
    assert failed.returncode != 0
    rendering = (out / "rendering.txt").read_text()
    assert "[not drawn] imc24-fig03: the dataset has no ok run of scenario 'noloss'" in rendering
    assert f"[failed] imc24-tab04: its job failed or did not run in this run (log: {out / 'logs' / 'render' / 'imc24-tab04.log'})" in rendering
    assert "imc24-tab03" not in rendering  # drawn
