"""The workflow on datasets that hold part of what the papers need, or hostile input: the imc24 artifact's
handshake-only captures, a raw folder with links and hidden groups, a subset with a hostile title and a failed
artefact. Every run succeeds where it can and says what it could not draw or read."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from quicack.storage.database import connect
from tests.conftest import REPO, SAMPLE_RAW, config_for, published, runs_in, snakemake

pytestmark = pytest.mark.slow


QIR_AS_FOUND = REPO / "tests" / "data" / "qir_as_found"


def test_a_handshake_only_dataset_renders_what_it_can_and_says_what_not(tmp_path):
    """The QIR captures as the imc24 artifact publishes them (fixture: recorded runs in that layout): Table 3 is
    drawn, every artefact that needs another scenario is a placeholder saying what is missing, the run
    succeeds, and rendering.txt lists what could not be drawn; strict mode fails on it."""
    results = tmp_path / "results"
    done = snakemake(
        "--config",
        "dataset=qir",
        f"raw_dir={QIR_AS_FOUND / 'all-interop-servers'}",
        f"results_dir={results}",
        "scan_dir=",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = results / "qir"
    rendering = (out / "rendering.txt").read_text(encoding="utf-8")
    # 16 imc24 testbed artefacts (6 drawn; imc24-fig04-measured needs the Δt sweep) + the ACK-ratio formula tables and
    # claims (8, drawn) + ackfreq22-tab02 (not drawn) + 6 scan artefacts (no scan: placeholders), Table 5 (the CDN → AS
    # mapping, drawn) and the scan claims (drawn, every claim unmeasured) + the 8 measured rethink / tcpquic artefacts
    # (no rethink-satellite runs: placeholders) + the 8 measured ackfreq22 artefacts (no ackfreq22 path profile) + the
    # ACK-ratio senders' table (no long download: placeholder) + App. E's RFC 9002 agreement (no qlog with RTT samples:
    # placeholder)
    # Drawn from the runs: Table 3 and imc24's claims of it; the rest of the 16 artefacts the old summary called
    # drawn are models, formula tables and formula claims (10), or tables with nothing of the dataset's in them
    # (Tables 2 and 4 read 0 runs, Table 5 and the scan claims 0 scan connections).
    assert "artefacts: 51 (2 drawn from the dataset, 10 from models or formulas, 39 not drawn)" in rendering
    assert "    imc24-claims: 6 measured claims\n    imc24-tab03: 11 ok runs (1 failed, excluded)\n" in rendering
    assert "imc24-tab02: nothing of the dataset's in it (no run it reads)" in rendering
    assert "ackfreq22-claims: 8 of 89 claims decided by formulas or the paper's tables, none measured" in rendering
    assert f"{out / 'rendering.txt'}:\n{rendering}" in done.stdout  # printed at the end of the run
    assert (
        "ackfreq22-tab04: the dataset has no ok run of the 1 MB downloads over the emulated ackfreq22 paths"
        in rendering
    )
    assert "imc24-fig08: the dataset has no scan (config scan_dir)" in rendering
    assert (
        "ackfreq22-tab02: the dataset has no ok run transferring at least 1 MB with the client's default ACK policy"
        in rendering
    )
    assert (
        "imc24-fig05: the dataset has no ok run with ttfb_capture_ms of scenario 'amplification' at RTT 9 ms"
        in rendering
    )
    assert "imc24-fig04-measured: the dataset has no ok run of the Δt sweep" in rendering
    table3 = pl.read_csv(out / "tables" / "imc24-tab03.csv", infer_schema=False)
    assert table3.filter(pl.col("server") == "quinn").select("initial_1", "initial_3").row(0) == ("0.4", "no run")
    footnote = (out / "tables" / "imc24-tab03.md").read_text(encoding="utf-8").splitlines()[-1]
    assert footnote.startswith("EMULATED DATA — dataset 'qir-as-found'")  # from tests/data/qir_as_found/dataset.yaml
    assert (out / "figures" / "imc24-fig05.png").stat().st_size > 0
    statuses = sorted(str(p) for p in out.rglob("*.status.json"))
    strict = subprocess.run(["quicack", "render-summary", *statuses, "--out", str(tmp_path / "r.txt"), "--strict"],
                            capture_output=True, text=True, encoding="utf-8")
    assert strict.returncode != 0 and "39 artefact(s) could not be drawn" in strict.stderr


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
    (raw / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
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
    summary = (results / "t" / "summary.txt").read_text(encoding="utf-8")
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
    summary = (results / "t" / "summary.txt").read_text(encoding="utf-8")
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
    (raw.parent / "dataset.yaml").write_text(HOSTILE_DESCRIPTION, encoding="utf-8")
    results = tmp_path / "results"
    out = results / "t"
    config = config_for(raw, results)
    notebooks = [str(out / "notebooks" / f"{a}.ipynb") for a in ("imc24-fig03", "imc24-tab03")]
    done = snakemake(published(out / "quicack.duckdb"), *notebooks, *config)
    assert done.returncode == 0, done.stderr[-3000:]
    status = json.loads((out / "figures" / "imc24-fig03.status.json").read_text(encoding="utf-8"))
    assert not status["rendered"] and "no ok run of scenario 'noloss'" in status["missing"]
    assert all((out / "figures" / f"imc24-fig03.{fmt}").stat().st_size > 1000 for fmt in ("pdf", "png"))
    tex = (out / "tables" / "imc24-tab03.tex").read_text(encoding="utf-8")
    assert not [line for line in tex.splitlines() if "\\input" in line and not line.startswith("%")], tex
    assert tex.splitlines()[-1].startswith("% Dataset 'subset': Three groups of the embedded runs \\input{/etc/passwd}")

    # One artefact fails (its published Parquet damaged: hand-made), the others were drawn: rendering.txt says so.
    (snapshot,) = (out / "snapshots").iterdir()
    for part in (snapshot / "handshake_runs").glob("*.parquet"):
        part.unlink()  # a new file, not the hard-linked working one: the workflow sees no change
        part.write_bytes(b"not parquet")
    failed = snakemake(str(out / "notebooks" / "imc24-tab04.ipynb"), *config)
    assert failed.returncode != 0
    rendering = (out / "rendering.txt").read_text(encoding="utf-8")
    assert "\n    imc24-fig03: the dataset has no ok run of scenario 'noloss'" in rendering
    log = out / "logs" / "render" / "imc24-tab04.log"
    assert f"\n    imc24-tab04: its job failed or did not run in this run (log: {log})" in rendering
    assert "\n    imc24-tab03: " in rendering.split("not drawn (why)")[0]  # drawn
