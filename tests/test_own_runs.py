"""A researcher's own runs (issue 39): plain real files copied from the embedded dataset, with no run.json or a
partial one. Missing parameters degrade (status inferred, the rest from the folder name, the key that is missing
named), wrong inputs fail with their reason, and the README's "Your own runs" table is the schema's."""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from quicack.cli import COMMANDS, main
from quicack.metrics.selection import MissingData, require_runs
from quicack.models import recovery
from quicack.schema.run_json import markdown_table
from quicack.stages import ingest
from quicack.stages.derive_stage import DERIVE_INPUTS
from quicack.storage.database import connect
from tests.conftest import QLOG_FIXTURES, REPO, SAMPLE_RAW, UNLOCKED, config_for, published, snakemake

GROUP = "quic-go_ngtcp2"
SWEEP = ("noloss-iack-rtt9ms-10KB-h3/1", "noloss-wfc-rtt9ms-10KB-h3/1", "noloss_delay_50ms-iack-rtt9ms-10KB-h3/1")


def copy_runs(raw: Path, testcases=SWEEP, run_json: bool | dict = False) -> Path:
    """Copies of recorded runs (their qlogs, captures and keylog), without the testbed's run.json; with
    ``run_json`` a partial one: the keys the issue's reporter wrote (mode, scenario, rtt_ms, file_bytes)."""
    if not (SAMPLE_RAW / GROUP).is_dir():
        pytest.skip("data/sample/raw is not unpacked (install.sh unpacks it)")
    for testcase in testcases:
        run = raw / GROUP / testcase
        shutil.copytree(SAMPLE_RAW / GROUP / testcase, run)
        (run / "run.json").unlink()
        if run_json:
            scenario, mode, *_ = testcase.split("-")
            keys = {"mode": mode, "scenario": scenario, "rtt_ms": 9.0, "file_bytes": 10240}
            (run / "run.json").write_text(
                json.dumps({**keys, **(run_json if isinstance(run_json, dict) else {})}), encoding="utf-8"
            )
    return raw


def test_a_partial_run_json_keeps_status_inference_and_names_the_missing_key(tmp_path):
    """Before: a run.json with mode/scenario/rtt_ms/file_bytes switched status inference off (every run 'without
    status') and nothing said cert_delay_ms was missing. After: status inferred from the data, client and server from
    the folder name, and one issue row per missing key naming the study that needs it."""
    tables = ingest.ingest_group(copy_runs(tmp_path / "raw", run_json=True), GROUP, "t")
    runs = tables["runs"].sort("run_id")
    assert runs["status"].to_list() == ["ok"] * 3
    assert set(runs["status_source"]) == {"inferred from capture"}
    assert set(runs["client_impl"]) == {"ngtcp2"} and set(runs["server_impl"]) == {"quic-go"}
    discover = tables["ingest_issues"].filter(pl.col("stage") == "discover")
    assert discover.select("path", "severity").rows() == [(GROUP, "info")]
    assert discover["message"][0].startswith("3 of 3 run(s) have a run.json that does not say 'cert_delay_ms'")
    assert "imc24 Δt sweep" in discover["message"][0]


def test_strict_mode_does_not_fail_on_info_rows_and_the_summary_counts_each_severity(tmp_path, monkeypatch):
    """A partial run.json's info row (a key left out) is no fault of the input: before, build-db counted every row
    that is not an error as a warning ("0 errors, 1 warnings") and `strict: true` failed on it."""
    copy_runs(tmp_path / "raw", SWEEP[:1], run_json=True)
    monkeypatch.chdir(tmp_path)
    assert main(["ingest-group", "--raw", "raw", "--group", GROUP, "--dataset", "t", "--parquet", "parquet"]) == 0
    build = ["build-db", "--parquet", "parquet", "--db", "t.duckdb", "--summary", "summary.txt", "--strict"]
    assert main(build) == 0
    summary = (tmp_path / "summary.txt").read_text(encoding="utf-8")
    assert "ingest issues: 0 errors (input skipped), 0 warnings (input used in part), 1 info" in summary
    assert "[info] discover, 1 rows: N of N run(s) have a run.json that does not say 'cert_delay_ms'" in summary


def test_runs_without_run_json_are_described_by_their_folder_names(tmp_path):
    tables = ingest.ingest_group(copy_runs(tmp_path / "raw"), GROUP, "t")
    assert tables["runs"].select("mode", "rtt_ms").unique().height == 2  # from the folder names
    discover = tables["ingest_issues"].filter(pl.col("stage") == "discover")
    # Their layout has none (QIR logs, the imc24 artifact): not a fault of each run (the README says what they lack).
    assert discover.is_empty()


def test_a_selection_needing_a_key_the_runs_lack_says_which(tmp_path):
    """Before: imc24-fig04-measured crashed (TypeError float + None in first_pto_reduction_ms); after: MissingData
    naming the run.json key, and the model function answers None for an unknown Δt."""
    runs = ingest.ingest_group(copy_runs(tmp_path / "raw", run_json={"status": "ok"}), GROUP, "t")["runs"]
    with pytest.raises(MissingData, match=r"says its 'cert_delay_ms': the 3 ok run\(s\) of it lack run.json key"):
        require_runs(runs, "of the Δt sweep", keys=("cert_delay_ms", "rtt_ms"))
    assert require_runs(runs, "of the Δt sweep", keys=("rtt_ms",)) is runs
    assert recovery.first_pto_reduction_ms(9.0, None) is None
    assert recovery.first_pto_reduction_ms(9.0, 50.0) == pytest.approx(150.0)


def test_readme_run_json_table_is_the_schema():
    """The README's table of run.json keys is generated from quicack.schema.run_json (one schema)."""
    assert markdown_table() in (REPO / "README.md").read_text(encoding="utf-8")


def quicack(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["quicack", *args], capture_output=True, text=True, encoding="utf-8", cwd=cwd, timeout=120)


@pytest.mark.parametrize(
    ("raw_dir", "said"),
    [
        ("missing", "does not exist"),
        ("empty", "holds no run group"),
        (f"raw/{GROUP}", "has no <server>_<client> folder above <testcase>/"),  # a run group given as raw_dir
    ],
    ids=["typo", "empty_folder", "one_level_too_deep"],
)
def test_a_raw_dir_without_a_dataset_fails_with_the_reason(tmp_path, raw_dir, said):
    """Before: an empty database and exit 0 (a run group as raw_dir: every run's server and scenario null)."""
    copy_runs(tmp_path / "raw", SWEEP[:1])
    (tmp_path / "empty").mkdir()
    done = quicack("dataset-issues", "--raw", str(tmp_path / raw_dir), "--parquet", str(tmp_path / "parquet"))
    assert done.returncode == 2 and said in done.stderr
    fine = quicack("dataset-issues", "--raw", str(tmp_path / "raw"), "--parquet", str(tmp_path / "parquet"))
    assert fine.returncode == 0, fine.stderr


def test_the_workflow_on_a_mistyped_raw_dir_fails_saying_so(tmp_path):
    done = snakemake(
        published(tmp_path / "results" / "t" / "quicack.duckdb"), *config_for(tmp_path / "typo", tmp_path / "results")
    )
    assert done.returncode != 0 and f"raw_dir {tmp_path / 'typo'} does not exist" in done.stderr


def test_pcap_with_a_keylog_that_does_not_exist_fails(tmp_path):
    """Before: a warning and exit 0, every packet left encrypted."""
    run = SAMPLE_RAW / GROUP / SWEEP[0]
    done = quicack(
        "pcap",
        str(run / "sim" / "trace_node_left.pcap.gz"),
        "--keylog",
        str(run / "client" / "key.log"),
        "--out",
        str(tmp_path),
    )
    assert done.returncode == 2 and "key.log does not exist" in done.stderr
    done = quicack(
        "pcap",
        str(run / "sim" / "trace_node_left.pcap.gz"),
        "--keylog",
        str(run / "client" / "keys.log"),
        "--out",
        str(tmp_path),
    )
    assert done.returncode == 0 and f"-> {tmp_path}/<table>.parquet" in done.stderr
    assert (tmp_path / "connections.parquet").is_file()


def test_qlog_command_writes_connections_says_where_and_why_and_sql_opens_its_folder(tmp_path):
    """Before: no connections, no word of where the Parquet went, an issue's reason only in ingest_issues.parquet;
    quicack sql could not open the folder, refused :memory:, and --csv ended in a ComputeError on list columns."""
    cut = tmp_path / "cut.qlog"  # hand-made damage: a recorded qlog cut in the middle, as a killed writer leaves it
    recorded = (QLOG_FIXTURES / "aioquic" / "client.qlog").read_bytes()
    cut.write_bytes(recorded[: len(recorded) // 2])
    out = tmp_path / "out"
    done = quicack("qlog", str(QLOG_FIXTURES / "aioquic"), str(cut), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"-> {out}/: connections.parquet" in done.stderr and "(5 connection(s))" in done.stderr
    assert "cut.qlog" in done.stderr and "damaged at byte" in done.stderr  # the reason, printed
    answer = quicack(
        "sql",
        "--db",
        str(out),
        "--csv",
        "SELECT vantage, first_rtt_ms IS NOT NULL AS sampled FROM connections ORDER BY ALL",
    )
    assert answer.returncode == 0, answer.stderr
    assert (
        answer.stdout.splitlines()
        # The cut copy's connection has no vantage (its header is gone) and no RTT sample (its ACKs are).
        == ["vantage,sampled", "client,true", "client,true", "client,true", "server,true", ",false"]
    )
    nested = quicack("sql", "--db", str(out), "--csv", "SELECT [1, 2] AS l, {'a': 'x'} AS s FROM connections LIMIT 1")
    assert nested.returncode == 0 and nested.stdout.splitlines()[1] == '"[1, 2]","{""a"": ""x""}"'
    refused = quicack("sql", "--db", str(out), "SELECT * FROM read_text('/etc/hostname')")
    assert refused.returncode == 1 and "refused" in refused.stderr  # the sandbox holds for a folder too
    memory = quicack("sql", "--db", ":memory:", "--csv", "SELECT 42 AS answer")
    assert (memory.returncode, memory.stdout) == (0, "answer\n42\n")


def test_every_option_of_the_user_commands_has_help():
    top = quicack("--help").stdout
    assert "QUIC acknowledgement analysis" in top and "The ``quicack`` command" not in top
    for command in ("qlog", "pcap", "sql"):
        parser = argparse.ArgumentParser()
        module, _, function = COMMANDS[command][0].partition(":")
        getattr(importlib.import_module(module), function)(parser)
        without = [action.dest for action in parser._actions if not action.help]
        assert without == [], f"quicack {command}: {without} have no help"


def readme_example(root: Path) -> str:
    """The README's "Your own runs" example as a script: its folder moved to ``root``, on the tests' two cores and
    unlocked (conftest.UNLOCKED), without its last command (every table and figure: minutes, not seconds)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- own-runs-example -->\n```sh\n", 1)[1].split("\n```", 1)[0]
    commands = block.splitlines()
    assert commands[-1] == "snakemake --cores all --configfile /tmp/myruns/config.yaml"  # what is left out
    script = "\n".join(commands[:-1]).replace("/tmp/myruns", str(root))
    return script.replace("snakemake --cores all", f"snakemake --cores 2 {UNLOCKED}")


@pytest.mark.slow
def test_own_runs_from_the_readme_give_database_query_and_figure_then_a_partial_run_json_degrades(tmp_path):
    """The whole flow on plain real files (issue 39 item 7): the README's example (no run.json) gives the database,
    its query answers with statuses inferred from the data, and imc24 Fig. 16 is drawn from the four runs. Then the
    reporter's partial run.json (status, mode, scenario, rtt_ms, file_bytes): before, imc24-fig04-measured and
    imc24-claims crashed the run (TypeError in first_pto_reduction_ms); after, the run succeeds, the placeholder names
    cert_delay_ms, and ingest_issues has one row for the key."""
    root = tmp_path / "myruns"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", readme_example(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer = [line for line in done.stdout.splitlines() if "inferred from capture" in line]
    assert len(answer) == 4 and all(" ok " in line for line in answer), done.stdout
    out = root / "results" / "myruns"
    assert json.loads((out / "figures" / "imc24-fig16.status.json").read_text(encoding="utf-8"))["rendered"] is True
    assert (out / "figures" / "imc24-fig16.png").stat().st_size > 0
    with connect(out / "quicack.duckdb") as con:
        assert con.execute("SELECT count(*) FROM scan_connections").fetchone() == (0,)  # scan_dir: "" kept it out
        said = con.execute(
            "SELECT severity, message FROM ingest_issues WHERE message LIKE '%cert_delay_ms%'"
        ).fetchall()
    assert said == []  # no run.json: nothing left out by one

    for run in (root / "raw").glob("*/*/1"):
        scenario, mode, *_ = run.parent.name.split("-")
        keys = {"status": "ok", "mode": mode, "scenario": scenario, "rtt_ms": 9.0, "file_bytes": 10240}
        (run / "run.json").write_text(json.dumps(keys), encoding="utf-8")
    targets = [out / "figures" / "imc24-fig04-measured.png", out / "tables" / "imc24-claims.csv"]
    again = snakemake(*map(str, targets), "--configfile", str(root / "config.yaml"))
    assert again.returncode == 0, again.stderr[-3000:]
    status = json.loads((out / "figures" / "imc24-fig04-measured.status.json").read_text(encoding="utf-8"))
    assert status["rendered"] is False and "lack run.json key(s) 'cert_delay_ms'" in status["missing"]
    with connect(out / "quicack.duckdb") as con:
        runs = con.execute("SELECT status, status_source, count(*) FROM runs GROUP BY ALL").fetchall()
        said = con.execute("SELECT severity FROM ingest_issues WHERE message LIKE '%cert_delay_ms%'").fetchall()
    assert runs == [("ok", "run.json", 4)] and said == [("info",), ("info",)]


def test_fig16_of_a_client_with_one_mode_only_says_both_modes_are_needed(tmp_path):
    """Before: two empty panels labelled "no value: ngtcp2" above a footnote counting the ok runs; after: a
    placeholder saying each client needs ok runs in both modes (real runs: WFC only, then both)."""
    from quicack.figures.imc24_pto import imc24_fig16_pto_improvement
    from quicack.stages.derive_stage import derive_tables

    raw = copy_runs(tmp_path / "raw", SWEEP[1:2])

    def figure():
        tables = ingest.ingest_group(raw, GROUP, "t")
        derived = derive_tables({name: tables[name] for name in DERIVE_INPUTS}, recovery.RecoveryParams())
        return imc24_fig16_pto_improvement(derived["handshake_runs"])

    assert "no client with ok runs in both modes (IACK and WFC)" in figure().missing
    shutil.copytree(SAMPLE_RAW / GROUP / SWEEP[0], raw / GROUP / SWEEP[0])
    assert figure().missing == ""


def test_rendering_txt_tells_drawn_from_the_runs_models_and_not_drawn_apart(tmp_path):
    """Before: "N drawn" counted the models, the formula tables and tables that read 0 runs as drawn, and a
    placeholder said "(1 runs of it in the dataset)". After, on one real WFC run: three groups, the runs counted."""
    from quicack.figures.common import rendering_summary, save
    from quicack.figures.imc24_pto import imc24_fig16_pto_improvement
    from quicack.figures.imc24_scan import imc24_tab05_cdn_asn
    from quicack.figures.imc24_tables import imc24_tab02_guidelines, imc24_tab04_client_defaults
    from quicack.figures.rfc9002_model import imc24_fig02_pto_evolution
    from quicack.provenance import DatasetDescription
    from quicack.schema import SCAN_CONNECTIONS
    from quicack.stages.derive_stage import derive_tables

    tables = ingest.ingest_group(copy_runs(tmp_path / "raw", SWEEP[1:2]), GROUP, "t")
    derived = derive_tables({name: tables[name] for name in DERIVE_INPUTS}, recovery.RecoveryParams())
    handshakes = derived["handshake_runs"]
    rendered = {
        "imc24-fig02": imc24_fig02_pto_evolution(),
        "imc24-fig16": imc24_fig16_pto_improvement(handshakes),
        "imc24-tab02": imc24_tab02_guidelines(handshakes, tables["runs"]),  # needs both modes: reads 0 runs
        "imc24-tab04": imc24_tab04_client_defaults(handshakes),
        "imc24-tab05": imc24_tab05_cdn_asn(SCAN_CONNECTIONS.empty()),  # no scan: the paper's mapping only
    }
    for artefact, one in rendered.items():
        save(one, tmp_path / "out", artefact, "png", DatasetDescription.undescribed("t"))
    text, not_drawn = rendering_summary(sorted((tmp_path / "out").glob("*.status.json")))
    assert not_drawn == 3
    assert "artefacts: 5 (1 drawn from the dataset, 1 from models or formulas, 3 not drawn)" in text
    drawn, models, missing = text.split("\n\n")[2:]
    assert drawn.splitlines()[1:] == ["    imc24-tab04: 1 ok run"]
    assert models.splitlines()[1:] == [
        "    imc24-fig02: Computed from the RFC 9002 formulas in quicack.models.recovery (no measurement)."
    ]
    assert missing.splitlines()[1:] == [
        "    imc24-fig16: the dataset has no client with ok runs in both modes (IACK and WFC) at one RTT (1 run of it "
        "in the dataset)",
        "    imc24-tab02: nothing of the dataset's in it (no run it reads): the table holds the paper's side only",
        "    imc24-tab05: nothing of the dataset's in it (0 scan connections): the table holds the paper's side only",
    ]


def _cells_of(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_a_table_for_a_paper_has_human_headers_with_units_one_number_format_and_counts_in_words(tmp_path):
    """imc24 Table 3 of three real runs. Before: the headers were column names ('initial\\_1' in the .tex, '_1' the
    repetition), "1 runs", and the Markdown printed the cells "0.0" as 0 (tabulate parsed them back into numbers)."""
    from quicack.figures.common import save
    from quicack.figures.imc24_tables import imc24_tab03_server_ack_delay
    from quicack.provenance import DatasetDescription

    tables = ingest.ingest_group(copy_runs(tmp_path / "raw"), GROUP, "t")
    rendered = imc24_tab03_server_ack_delay(tables["runs"], tables["frames"])
    save(rendered, tmp_path, "imc24-tab03", "", DatasetDescription.undescribed("t"))
    headers = ["Server", "Mode", "Initial, rep. 1 (ms)", "Handshake, rep. 1 (ms)", "Paper: Initial (ms)",
               "Paper: Handshake (ms)", "Measured in"]  # fmt: skip
    header, _, *rows = (tmp_path / "imc24-tab03.md").read_text(encoding="utf-8").split("\n\n")[0].splitlines()
    assert _cells_of(header) == headers
    csv = pl.read_csv(tmp_path / "imc24-tab03.csv", infer_schema=False)  # the CSV keeps the column names
    assert csv.columns[:3] == ["server", "mode", "initial_1"]
    assert [_cells_of(row) for row in rows] == [list(row) for row in csv.rows()]  # each cell as the table has it
    assert {row[2] for row in csv.rows()} == {"0.0"}
    assert all("noloss: 1 run, client ngtcp2" in row[-1] for row in csv.rows())
    tex = (tmp_path / "imc24-tab03.tex").read_text(encoding="utf-8").splitlines()
    assert tex[2] == " & ".join(headers) + " \\\\"


def test_a_float_column_has_one_number_format_flags_are_words_and_a_missing_value_is_empty_handmade(tmp_path):
    """Hand-made values, the kinds a table holds: a float column with 0.5 and 0 (before: "0.5" and "0" in the
    Markdown, "NaN" in the .tex for a missing one), a flag (before: True/False) and a count."""
    from quicack.figures.common import save
    from quicack.provenance import DatasetDescription
    from quicack.rendered import Rendered

    table = pl.DataFrame(
        {"median": [0.5, 0.0, None, 12.25], "agrees": [True, False, None, True], "runs": [1, 2, 3, None]}
    )
    save(Rendered(table), tmp_path, "t-tab", "", DatasetDescription.undescribed("t"))
    header, _, *rows = (tmp_path / "t-tab.md").read_text(encoding="utf-8").split("\n\n")[0].splitlines()
    shown = [["0.50", "yes", "1"], ["0.00", "no", "2"], ["", "", "3"], ["12.25", "yes", ""]]
    assert _cells_of(header) == table.columns and [_cells_of(row) for row in rows] == shown  # no label: the name
    tex = (tmp_path / "t-tab.tex").read_text(encoding="utf-8").splitlines()
    assert tex[0] == "\\begin{tabular}{rlr}"  # numbers to the right
    assert tex[4:8] == [" & ".join(row) + " \\\\" for row in shown]
