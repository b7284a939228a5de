"""`quicack sql` explores the dataset: on a database built from a real capture (as the pipeline builds it: views over a
snapshot's Parquet files, paths relative to the repository), queries read the views from any folder, every attempt
to write a file, read another one or install an extension is refused with a message naming `--unrestricted`, and
that flag lifts the restriction."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from quicack.cli import main
from quicack.pcap.decode import decode_capture
from quicack.pcap.pcap_command import OUTPUT_TABLES, write_capture_parquet
from quicack.stages.database_stage import write_rfc9002_agreement
from quicack.storage import database

PCAP = Path(__file__).parent / "data" / "pcap"
README = Path(__file__).parents[1] / "README.md"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository folder holding results/sample/quicack.duckdb over a snapshot of one decoded capture."""
    root = tmp_path_factory.mktemp("repo")
    snapshot = root / "results" / "sample" / "snapshots" / "s1"
    capture = decode_capture(PCAP / "aioquic_sll.pcap", PCAP / "aioquic_sll.keys.log", run_id="run")
    write_capture_parquet(capture, snapshot)
    files = {name: [snapshot / f"{name}.parquet"] for name in OUTPUT_TABLES}
    database.build_database(root / "results" / "sample" / "quicack.duckdb", files, root)
    # As build-db does after the views: the dataset-wide table the README queries too (empty: no qlog here).
    write_rfc9002_agreement(root / "results" / "sample" / "quicack.duckdb", files)
    return root


def sql(repo: Path, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(["sql", "--db", str(repo / "results" / "sample" / "quicack.duckdb"), "--csv", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_views_name_relative_parquet_paths(repo: Path) -> None:
    # what the restriction must keep readable: each view's files, spelled relative to the repository
    with database.connect(repo / "results" / "sample" / "quicack.duckdb") as con:
        (view,) = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'frames'").fetchone()
    assert "'results/sample/snapshots/s1/frames.parquet'" in view


@pytest.mark.parametrize("where", ["repository", "elsewhere"])
def test_views_over_parquet_are_read_under_the_restriction(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.chdir(repo if where == "repository" else tmp_path)
    code, out, err = sql(repo, capsys, "SELECT frame_type, count(*) AS n FROM frames GROUP BY ALL ORDER BY ALL")
    assert code == 0, err
    assert "ack,6" in out.splitlines() and "stream,20" in out.splitlines()
    code, out, err = sql(
        repo, capsys, "SELECT count(*) FROM read_parquet('results/sample/snapshots/s1/packets.parquet')"
    )
    assert (code, out.splitlines()[1]) == (0, "32"), err


def test_the_readme_queries_run_under_the_restriction(repo: Path, capsys: pytest.CaptureFixture) -> None:
    blocks = re.findall(r"```sql\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    queries = [query for block in blocks for query in block.split(";") if re.sub(r"--[^\n]*", "", query).strip()]
    assert len(queries) >= 5
    for query in queries:
        code, _, err = sql(repo, capsys, query)
        assert code == 0, f"{query}: {err}"


OUTSIDE = "/tmp/quicack_sql_escape"  # noqa: S108 - a path the escape attempts below must not create
ESCAPES = {
    "copy_to_a_file": f"COPY (SELECT 1) TO '{OUTSIDE}.csv'",
    "copy_onto_the_dataset": "COPY (SELECT 1 AS a) TO '{repo}/results/sample/snapshots/s1/frames.parquet' "
                             "(USE_TMP_FILE false)",
    "explain_analyze_copy": f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{OUTSIDE}.csv'",
    "explain_analyze_copy_onto_the_dataset": "EXPLAIN /* a comment */ ANALYZE COPY (SELECT 1 AS a)"
    " TO '{repo}/results/sample/snapshots/s1/frames.parquet' (USE_TMP_FILE false)",
    "export_database": f"EXPORT DATABASE '{OUTSIDE}'",
    "attach_writable": f"ATTACH '{OUTSIDE}.duckdb' AS other",
    "read_text": "SELECT * FROM read_text('/etc/shadow')",
    "read_csv": "SELECT * FROM read_csv('/etc/passwd')",
    "read_blob": "SELECT * FROM read_blob('/etc/hostname')",
    "glob": "SELECT * FROM glob('/etc/*')",
    "import_database": "IMPORT DATABASE '/etc'",
    "install": "INSTALL httpfs",
    "load": "LOAD httpfs",
    "autoinstall_over_https": "SELECT * FROM read_parquet('https://127.0.0.1:9/x.parquet')",
    "unlock": "SET enable_external_access = true",
    "unlock_then_read": "SET lock_configuration = false; SELECT * FROM read_text('/etc/passwd')",
    "profiling_output": f"SET profiling_output = '{OUTSIDE}.csv'",
    "log_to_a_file": f"SELECT * FROM enable_logging(storage = 'file', storage_path = '{OUTSIDE}')",
    "persistent_secret": "CREATE PERSISTENT SECRET s (TYPE http)",
}


@pytest.mark.parametrize("query", ESCAPES.values(), ids=ESCAPES.keys())
def test_escape_attempts_are_refused(repo: Path, capsys: pytest.CaptureFixture, query: str) -> None:
    frames = repo / "results" / "sample" / "snapshots" / "s1" / "frames.parquet"
    before = frames.read_bytes()
    code, out, err = sql(repo, capsys, query.replace("{repo}", str(repo)))
    assert code == 1 and out == ""
    assert err.startswith("query refused: ") and "`quicack sql --unrestricted`" in err, err
    assert frames.read_bytes() == before
    assert not any(Path(f"{OUTSIDE}{suffix}").exists() for suffix in ("", ".csv", ".duckdb"))


def test_the_prompt_answers_under_the_same_restriction(
    repo: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements = f"SELECT count(*) AS n\n  FROM packets;\n{ESCAPES['copy_to_a_file']};\nSELECT 42 AS answer"
    monkeypatch.setattr("sys.stdin", io.StringIO(statements))
    code = main(["sql", "--db", str(repo / "results" / "sample" / "quicack.duckdb"), "--csv"])
    out, err = capsys.readouterr()
    assert code == 1  # one statement was refused
    assert out.splitlines() == ["n", "32", "answer", "42"]
    assert err.startswith("query refused: COPY") and not Path(f"{OUTSIDE}.csv").exists()


def test_unrestricted_opens_it(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    written = tmp_path / "answer.csv"
    code, _, err = sql(repo, capsys, "--unrestricted", f"COPY (SELECT 42 AS answer) TO '{written}'")
    assert code == 0, err
    assert written.read_text(encoding="utf-8").splitlines() == ["answer", "42"]
    code, out, err = sql(repo, capsys, "--unrestricted", f"SELECT * FROM read_csv('{written}')")
    assert (code, out.splitlines()) == (0, ["answer", "42"]), err


def test_file_names_with_glob_characters_are_read(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # a folder on a Parquet file's path may hold *, ? or [ (run groups' are %-encoded, the results folder's and the
    # repository's are not): the view escapes them as [*], DuckDB checks the file the pattern matches
    snapshot = tmp_path / "results" / "sample" / "snapshots" / "group[1]*?"
    write_capture_parquet(decode_capture(PCAP / "aioquic_sll.pcap", PCAP / "aioquic_sll.keys.log", "run"), snapshot)
    files = {name: [snapshot / f"{name}.parquet"] for name in OUTPUT_TABLES}
    database.build_database(tmp_path / "results" / "sample" / "quicack.duckdb", files, tmp_path)
    code, out, err = sql(tmp_path, capsys, "SELECT count(*) FROM packets")
    assert (code, out.splitlines()) == (0, ["count_star()", "32"]), err
