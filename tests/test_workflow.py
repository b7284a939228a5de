"""The Snakemake workflow end to end on real recorded data: database, comments, README queries,
idempotence, determinism, strict mode, and the default pipeline on the embedded dataset."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys

import duckdb
import polars as pl
import pytest

from quicack.claims import NO_EXPLANATION
from quicack.claims.ackratio_claims import REFERENCES
from quicack.markup import md_text
from quicack.reference import REFERENCE_DIR, read_claims
from quicack.schema import TABLES
from quicack.storage.database import connect
from tests.conftest import QLOG_FIXTURES, REPO, config_for, make_run, published, snakemake

LOOPBACK = REPO / "tests" / "data" / "loopback"


def readme_queries() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sql\n(.*?)```", text, flags=re.S)


def test_database_has_every_table_commented_and_readme_queries_return_rows(real_raw, tmp_path):
    # a third run with a capture, for the queries over capture tables (ack_breakdown, frames from pcap)
    shutil.copytree(
        LOOPBACK / "ngtcp2_ngtcp2" / "transfer_10KB" / "1", real_raw / "ngtcp2_ngtcp2" / "transfer_10KB" / "1"
    )
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    done = snakemake(published(db), *config_for(real_raw, results, scan=True))
    assert done.returncode == 0, done.stderr[-3000:]
    with connect(db) as con:
        views = dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
        assert set(views) == set(TABLES)
        assert all(views.values())
        uncommented = con.execute(
            "SELECT table_name, column_name FROM duckdb_columns() WHERE NOT internal AND (comment IS NULL OR comment = "
            "'')"
        ).fetchall()
        assert uncommented == []
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 3
        assert con.execute("SELECT count(DISTINCT vantage) FROM rtt_samples").fetchone()[0] == 2
        queries = readme_queries()
        assert len(queries) >= 3
        for query in queries[1:]:  # the first lists ingest issues, which this clean input has none of
            assert con.execute(query).fetchall(), query
    summary = (results / "t" / "summary.txt").read_text(encoding="utf-8")
    assert "runs: 3 (3 ok" in summary

    again = snakemake(published(db), *config_for(real_raw, results, scan=True))
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_ingest_is_deterministic(real_raw, tmp_path):
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"

    def digests():
        # The working Parquet set; the database reads hard links of it (results/t/snapshots/<id>/).
        parquet = results / "t" / "parquet"
        return {
            p.relative_to(parquet): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(parquet.rglob("*.parquet"))
        }

    assert snakemake(published(db), *config_for(real_raw, results, scan=True)).returncode == 0
    first = digests()
    assert snakemake(published(db), "--forceall", *config_for(real_raw, results, scan=True)).returncode == 0
    assert digests() == first


def test_malformed_input_is_reported_and_strict_mode_fails(real_raw, tmp_path):
    broken = real_raw / "aioquic_aioquic" / "transfer" / "2" / "client" / "qlog"
    broken.mkdir(parents=True)
    (broken / "broken.qlog").write_text(
        '{"qlog_version": "0.3", "traces": [{"events": [', encoding="utf-8"
    )  # hand-made, cut
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
    assert "strict mode: 1 ingest issue(s); failing" in (results / "t" / "logs" / "database.log").read_text(
        encoding="utf-8"
    )
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
    rendering = (out / "rendering.txt").read_text(encoding="utf-8")
    assert f"artefacts: {len(artefacts)} (" in rendering and ", 0 not drawn)" in rendering
    assert "what it drew from is not declared" not in rendering  # every render function says what it reads
    assert f"{out / 'rendering.txt'}:\n{rendering}" in done.stdout  # printed at the end of the run
    for artefact in artefacts:
        if "-fig" in artefact:
            for fmt in ("pdf", "png"):
                assert (out / "figures" / f"{artefact}.{fmt}").stat().st_size > 1000, artefact
        else:
            for fmt in ("csv", "md", "tex"):
                assert (out / "tables" / f"{artefact}.{fmt}").stat().st_size > 100, artefact
            # A paper's headers, not column names: every column of every table has its label (a column named in
            # lower case as its header is one without; "4G paper (s)" or "TCP" are named as printed).
            names = pl.read_csv(out / "tables" / f"{artefact}.csv", n_rows=0).columns
            md_header = (out / "tables" / f"{artefact}.md").read_text(encoding="utf-8").splitlines()[0]
            labels = [cell.strip() for cell in md_header.strip("|").split("|")]
            unlabelled = [
                n for n, label in zip(names, labels, strict=True) if label == md_text(n) == md_text(n).lower()
            ]
            assert len(labels) == len(names) and unlabelled == [], (artefact, unlabelled)
            tex_header = (out / "tables" / f"{artefact}.tex").read_text(encoding="utf-8").splitlines()[2]
            tex_labels = tex_header.removesuffix(" \\\\").split(" & ")
            unlabelled = [
                n for n, label in zip(names, tex_labels, strict=True) if label == n.replace("_", "\\_").lower()
            ]
            assert unlabelled == [], (artefact, tex_header)
    # Footnotes take their words from the dataset's description (data/sample/dataset.yaml), stored in the database.
    assert (
        (out / "tables" / "imc24-tab03.md")
        .read_text(encoding="utf-8")
        .splitlines()[-1]
        .startswith("EMULATED DATA — dataset 'sample': ")
    )
    with duckdb.connect(str(out / "quicack.duckdb"), read_only=True) as con:
        assert con.execute("SELECT part, name, kind FROM dataset_description ORDER BY part").fetchall() == [
            ("runs", "sample", "emulated"),
            ("scan", "scan", "emulated-scan"),
        ]
    # The scan artefacts say that they are drawn from the emulated scan, not from the testbed runs.
    assert (
        (out / "tables" / "imc24-tab01.md")
        .read_text(encoding="utf-8")
        .splitlines()[-1]
        .startswith("EMULATED SCAN DATA — dataset 'scan': ")
    )
    # Every claim where the embedded data differs from the paper carries its reference row's explanation, and says it
    # is unexplained exactly where the reference row gives none (any non-empty text would pass NO_EXPLANATION).
    claims = pl.read_csv(out / "claims.csv", infer_schema_length=None)
    # (The ACK-ratio papers' references include the claims generated from their tables' cells.)
    references = [read_claims(path) for path in sorted(REFERENCE_DIR.glob("*_claims.csv"))]
    references += [reference().reference for reference in REFERENCES.values()]
    given = pl.concat([r.select("claim_id", pl.col("explanation").fill_null("").alias("given")) for r in references])
    given = given.unique("claim_id", keep="last", maintain_order=True)
    differing = claims.filter(pl.col("verdict") == "differ").join(given, on="claim_id", how="left")
    assert differing.height > 0 and differing["given"].null_count() == 0, differing["claim_id"].to_list()
    says_why = pl.when(pl.col("given").str.strip_chars() == "").then(pl.col("explanation") == NO_EXPLANATION)
    says_why = says_why.otherwise(pl.col("explanation").str.contains(pl.col("given"), literal=True))
    assert differing.filter(~says_why).is_empty(), differing.filter(~says_why)["claim_id"].to_list()
    with duckdb.connect(str(out / "quicack.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()[0] == len(TABLES)
    report = tmp_path / "report.html"
    made = snakemake("--report", str(report), "--config", f"results_dir={results}")
    assert made.returncode == 0, made.stderr[-2000:]
    html = report.read_text(encoding="utf-8", errors="replace")
    assert "imc24-fig02" in html and "numerical sweet spot" in html
    # Every rendered artefact is in the report with its caption, tables and claims included.
    for artefact in artefacts:
        assert artefact in html, artefact
    assert "claims.csv" in html and "EMULATED DATA" in html
    # The landing page is the claims overview of this run; each claim is listed, each caption names its claims.
    assert "Claims overview" in html and all(claim_id in html for claim_id in claims["claim_id"].to_list())
    assert (out / "claims_overview.md").read_text(encoding="utf-8").count("\n| `") == claims.height
    # ARTIFACT.md's claims section is what this run's claims.csv gives (quicack artifact-claims rewrites it).
    checked = subprocess.run([sys.executable, "-m", "quicack.cli", "artifact-claims", str(out / "claims.csv"),
                              "--check"],
                             cwd=REPO, capture_output=True, text=True, encoding="utf-8")  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    # The summary groups the issues by cause; every row is in ingest_issues.csv.
    issues = pl.read_csv(out / "ingest_issues.csv")
    with duckdb.connect(str(out / "quicack.duckdb"), read_only=True) as con:
        assert issues.height == con.execute("SELECT count(*) FROM ingest_issues").fetchone()[0]
    causes = issues.select("severity", "stage", "cause").unique().height
    assert f"{causes} cause(s); every row: ingest_issues.csv" in (out / "summary.txt").read_text(encoding="utf-8")


def test_duckdb_cli_opens_the_database_from_the_repository_root(real_raw, tmp_path):
    cli = shutil.which("duckdb")
    if cli is None:
        pytest.skip("DuckDB CLI not installed (pip install duckdb-cli)")
    results = REPO / "results" / "_test_cli"
    try:
        db = results / "t" / "quicack.duckdb"
        assert (
            snakemake(published(db.relative_to(REPO)), *config_for(real_raw, results.relative_to(REPO))).returncode == 0
        )
        out = subprocess.run(
            [cli, "-readonly", "-csv", str(db.relative_to(REPO)), "-c", "SELECT count(*) AS n FROM packets"],
            cwd=REPO, capture_output=True, text=True, timeout=60, encoding="utf-8",
        )
        assert out.returncode == 0, out.stderr
        assert int(out.stdout.splitlines()[-1]) > 0
    finally:
        shutil.rmtree(results, ignore_errors=True)


def test_qlog_command_writes_tables_and_fails_only_when_nothing_is_readable(tmp_path):
    ok = subprocess.run(
        ["quicack", "qlog", str(QLOG_FIXTURES / "ngtcp2"), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, encoding="utf-8",
    )
    assert ok.returncode == 0, ok.stderr
    assert len(ok.stdout.strip().splitlines()) == 2  # one summary line per file
    for table in ("packets", "frames", "metrics_logged", "endpoints", "ingest_issues", "rtt_samples"):
        assert (tmp_path / "out" / f"{table}.parquet").exists()
    garbage = tmp_path / "garbage.qlog"
    garbage.write_bytes(b"\x00\x01 not a qlog")  # hand-made malformed input
    bad = subprocess.run(
        ["quicack", "qlog", str(garbage), "--out", str(tmp_path / "bad")],
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    assert bad.returncode == 1


def test_any_group_folder_name_is_ingested(tmp_path):
    """Folder names with wildcard braces, glob characters, a leading '-' and a newline (hand-made names: no
    recorder writes them, but a file system allows them) reach the database unchanged; nothing is injected."""
    raw = tmp_path / "raw"
    names = ["a{group}_x", "-leading_x", "glob*[?]_x", "new\nline_x"]
    for name in names:
        make_run(
            raw,
            f"{name}/transfer/1",
            QLOG_FIXTURES / "ngtcp2" / "client.sqlog",
            QLOG_FIXTURES / "ngtcp2" / "server.sqlog",
            {"status": "ok", "repetition": 1},
        )
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


@pytest.mark.parametrize("key", ["results_dir", "dataset_description"])
def test_a_path_that_would_end_the_reports_scripts_is_refused(tmp_path, key):
    """Snakemake writes the run's paths into the HTML report's scripts unescaped: '</script><script>' in one (a
    path may hold '/') would run in a reviewer's browser (hand-made path)."""
    path = tmp_path / "a</script><script>alert(1)</script>"
    done = snakemake("-n", "--config", f"results_dir={tmp_path}", f"{key}={path}")
    assert done.returncode != 0 and key in done.stdout + done.stderr and "^[^<]*$" in done.stdout + done.stderr


def test_run_from_another_directory_keeps_every_render_job(tmp_path):
    """-s <repo>/Snakefile with the user's own --configfile from elsewhere: the same jobs as at home."""
    config = tmp_path / "mine.yaml"
    config.write_text(
        f"dataset: sample\nraw_dir: {REPO / 'data/sample/raw'}\nresults_dir: {tmp_path / 'results'}\n", encoding="utf-8"
    )
    done = subprocess.run(
        ["snakemake", "-s", str(REPO / "Snakefile"), "--configfile", str(config), "-n", "--cores", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, encoding="utf-8",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    jobs = set(re.findall(r"^(\w+)\s+\d+$", done.stdout, flags=re.M))
    notebooks = {f"render_{p.stem.replace('-', '_')}" for p in (REPO / "notebooks").glob("*.py")}
    assert notebooks and notebooks <= jobs and {"ingest_group", "database", "claims"} <= jobs
