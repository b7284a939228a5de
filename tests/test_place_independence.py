"""Where the results sit and what their folders are called change nothing: the database opens from any folder
whatever the results folder is named, and issue causes do not split on the characters of a path. (The locale and
the raw folder's place, end to end: tests/test_text_encoding.py.)"""

from __future__ import annotations

import subprocess

from quicack.cli import main
from quicack.reading.issues import grouped_issues, issue_row, issues_frame


def test_a_results_folder_not_named_results_gives_a_database_quicack_sql_opens_from_another_folder(
    real_raw, tmp_path, monkeypatch
):
    """Before: the views' paths are relative to the folder the database was built from, which `connect` took for
    the parent of a folder named 'results' (else the database's own folder): "No files found that match the
    pattern" from anywhere."""
    repository, elsewhere = tmp_path / "repository", tmp_path / "elsewhere"
    repository.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(repository)  # the Snakemake rules run from the repository, the results inside it
    parquet, db = "analysis/t/parquet", "analysis/t/quicack.duckdb"
    for group in ("aioquic_aioquic", "ngtcp2_ngtcp2"):
        assert (
            main(["ingest-group", "--raw", str(real_raw), "--group", group, "--dataset", "t", "--parquet", parquet])
            == 0
        )
    assert main(["build-db", "--parquet", parquet, "--db", db, "--summary", "analysis/t/summary.txt"]) == 0
    done = subprocess.run(
        ["quicack", "sql", "--csv", "--db", str(repository / db), "SELECT count(*) AS n FROM runs"],
        cwd=elsewhere, capture_output=True, encoding="utf-8", timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["n", "2"]


def test_issues_of_one_cause_in_a_folder_with_a_space_are_one_cause_handmade():
    """Hand-made rows (the messages a qlog cut while being written gets) in a run group whose folder name holds a
    space. Before: the path the message starts with stayed in the cause, one cause per file."""
    folder = "aioquic_aioquic/transfer à 10 KB/1/client/qlog"
    issues = issues_frame(
        issue_row(f"{folder}/{name}", "r", "qlog", "warning", f"{folder}/{name}: JSON document damaged at byte {at}")
        for name, at in (("a.qlog", 47), ("b.qlog", 90))
    )
    grouped = grouped_issues(issues)
    assert grouped["cause"].to_list() == ["JSON document damaged at byte N"]
    assert grouped["files"].to_list() == [2]
