"""Run-folder naming: quicack's QIR layout and the imc24 artifact's key=value log folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quicack.layout import RunLocation, file_size_bytes, parse_run_folder
from quicack.layout import testcase_name as make_testcase_name
from quicack.testbed.calibrate import calibrate, split_datagrams
from quicack.testbed.scenarios import SCENARIOS, expand

REPO = Path(__file__).resolve().parent.parent


def test_imc24_iack_folder() -> None:
    p = Path(
        "raw/logs_delay=10ms,c=aioquic,drop-to-client=2_3,drop-to-server=,file_size=10KB,instant-ack=1"
        "_2024-08-14T01:43:00/quic-go_aioquic/transfer/3/client/qlog/abc.qlog"
    )
    d = parse_run_folder(p)
    assert d["naming"] == "imc24"
    assert d["mode"] == "iack"
    assert d["one_way_delay_ms"] == 10.0 and d["rtt_ms"] == 20.0
    assert d["drop_to_client"] == [2, 3] and d["drop_to_server"] == []
    assert d["file_bytes"] == 10 * 1024
    assert d["server_impl"] == "quic-go" and d["client_impl"] == "aioquic"
    assert d["testcase"] == "transfer" and d["repetition"] == 3
    assert d["timestamp"] == "2024-08-14T01:43:00"


def test_imc24_wfc_folder() -> None:
    d = parse_run_folder("logs_delay=4.5ms,c=ngtcp2,delay-first-packet=200ms,drop-to-server=2_3_4,file_size=10MB")
    assert d["mode"] == "wfc" and d["cert_delay_ms"] == 200.0
    assert d["rtt_ms"] == 9.0 and d["drop_to_server"] == [2, 3, 4]
    assert d["file_bytes"] == 10 * 1024 * 1024


def test_quicack_folder_without_run_json(tmp_path: Path) -> None:
    name = make_testcase_name("drop_client_flight", "wfc", 9.0, "10KB", "hq")
    run = tmp_path / RunLocation("aioquic", "go-x-net", name, 2).relative()
    (run / "sim").mkdir(parents=True)
    d = parse_run_folder(run / "sim")
    assert d == d | {
        "naming": "quicack", "server_impl": "aioquic", "client_impl": "go-x-net", "scenario": "drop_client_flight",
        "mode": "wfc", "rtt_ms": 9.0, "file_bytes": 10240, "app_protocol": "hq", "repetition": 2,
    }  # fmt: skip


def test_quicack_run_json_wins(tmp_path: Path) -> None:
    run = tmp_path / "aioquic_quinn" / make_testcase_name("noloss", "iack", 100, "10KB", "h3") / "1"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"drop_to_server": [2, 3], "cert_delay_ms": 0.0}), encoding="utf-8")
    d = parse_run_folder(run)
    assert d["drop_to_server"] == [2, 3] and d["rtt_ms"] == 100.0 and "run_json" in d


@pytest.mark.parametrize(("text", "expected"), [("10KB", 10240), ("1MB", 1 << 20), ("10", None)])
def test_file_size(text: str, expected: int | None) -> None:
    assert file_size_bytes(text) == expected


@pytest.mark.parametrize(
    ("mode", "first_server_datagram", "drop_to_client"),
    [("iack", ("initial",), (2, 3)), ("wfc", ("initial", "handshake"), (2,))],
)
def test_calibration_on_recorded_baselines_of_imc24s_server(mode, first_server_datagram, drop_to_client) -> None:
    """On real no-loss captures of the embedded dataset (imc24's quic-go server, the aioquic client): IACK sends a lone
    ACK first and the whole ServerHello flight is datagrams 2-3; WFC coalesces ACK and ServerHello and only datagram 2
    remains; aioquic's second client flight is datagrams 2, 3, 4 — imc24 §4.2 and Table 4 — sometimes with one more ACK
    datagram in the same burst, by timing alone (hence one static mapping per client in the testbed)."""
    sim = REPO / "data" / "sample" / "raw" / "quic-go_aioquic" / f"noloss-{mode}-rtt9ms-10KB-h3" / "1" / "sim"
    _, server_datagrams = split_datagrams(sim / "trace_node_right.pcap.gz")
    assert server_datagrams[0].kinds == first_server_datagram
    calibration = calibrate(sim / "trace_node_left.pcap.gz", sim / "trace_node_right.pcap.gz")
    assert calibration.drop_to_client == drop_to_client
    assert calibration.drop_to_server[:3] == (2, 3, 4) and len(calibration.drop_to_server) <= 4


def test_expand_matrix_skips_unsupported_protocols() -> None:
    cfg = {"dataset": "t", "clients": ["go-x-net", "ngtcp2"], "modes": ["iack", "wfc"],
           "scenarios": ["noloss", "amplification"], "rtts_ms": [9], "app_protocol": "hq"}  # fmt: skip
    groups = expand(cfg)
    assert {g.client for g in groups} == {"go-x-net"}  # ngtcp2 (Debian) has no hq client
    amp = next(g for g in groups if g.scenario == "amplification")
    assert amp.cert_size == "large" and amp.cert_delay_ms == SCENARIOS["amplification"].cert_delay_ms == 200.0


def test_a_block_with_kept_repetitions_extends_the_recorded_groups_and_leaves_the_others_alone() -> None:
    import yaml

    from quicack.testbed.scenarios import group_from_json, group_to_json

    base = {"dataset": "t", "clients": ["quic-go"], "modes": ["iack"], "scenarios": ["noloss", "drop_server_flight"],
            "rtts_ms": [9, 100], "repetitions": 3}  # fmt: skip
    more = {
        "scenarios": ["drop_server_flight"],
        "rtts_ms": [9],
        "repetitions": 10,
        "kept_repetitions": 3,
        "server_side_capture": False,
    }
    before = {g.key: g for g in expand(base)}
    after = {g.key: g for g in expand(base | {"extra": [more]})}
    assert after.keys() == before.keys()
    extended = [key for key in after if after[key] != before[key]]
    assert extended == ["aioquic_quic-go/drop_server_flight-iack-rtt9ms-10KB-h3"]
    assert after[extended[0]].repetitions == 10 and after[extended[0]].kept_repetitions == 3
    # The earlier block's group comes along (a recording from scratch makes repetitions 1–3 with its settings first),
    # also through the JSON a Snakemake job gets.
    assert after[extended[0]].kept_base == before[extended[0]] and before[extended[0]].server_side_capture
    assert group_from_json(group_to_json(after[extended[0]])) == after[extended[0]]
    with pytest.raises(ValueError, match="earlier block records 3"):
        expand(base | {"extra": [more | {"kept_repetitions": 2}]})
    # The other groups' job parameters are unchanged, so Snakemake does not re-record them.
    assert all(group_to_json(after[key]) == group_to_json(before[key]) for key in after if key not in extended)
    with pytest.raises(ValueError, match="kept_repetitions"):
        expand(base | {"extra": [more | {"repetitions": 3}]})
    # The embedded dataset's config: the 9 ms groups of Figs. 5–7 and 16 go to ten repetitions, keeping 1–3, for
    # all six clients (quiche's too).
    testbed = yaml.safe_load((REPO / "config" / "testbed.yaml").read_text(encoding="utf-8"))["testbed"]
    kept = [g for g in expand(testbed) if g.kept_repetitions]
    assert {(g.scenario, g.rtt_ms, g.repetitions, g.kept_repetitions) for g in kept} == {
        (s, 9.0, 10, 3) for s in ("noloss", "drop_client_flight", "amplification", "drop_server_flight")
    }
    assert len({g.client for g in kept}) == 6 and len(kept) == 6 * 4 * 2


def test_runner_refuses_clearly_without_root(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from quicack.testbed import run

    monkeypatch.setattr("os.geteuid", lambda: 1000)
    code = run.main(["--config-json", json.dumps({"dataset": "t", "clients": ["aioquic"], "modes": ["iack"],
                                                  "scenarios": ["noloss"], "rtts_ms": [9]})])  # fmt: skip
    assert code == 2
    assert "needs root" in capsys.readouterr().err


def test_static_client_flight_is_the_shortest_one_seen() -> None:
    """A longer baseline flight holds an ACK-only datagram sent in between by timing (aioquic)."""
    from quicack.testbed.run import choose_static_flight

    assert choose_static_flight([(2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4)]) == (2, 3, 4)
    assert choose_static_flight([(3, 4, 5), (3, 4, 5), (3, 4, 5)]) == (3, 4, 5)
    assert choose_static_flight([(3, 4, 6), (3, 4, 5), (3, 4, 5)]) == (3, 4, 5)


def test_tidy_folds_logs_into_run_json_without_machine_paths(tmp_path: Path) -> None:
    """Per-process logs and the server's ready file end up in run.json (non-empty output only, with
    this machine's paths made relative); the files and the logs folder are gone."""
    import json
    import sysconfig

    from quicack.testbed import tidy

    run = tmp_path / "aioquic_quic-go" / "noloss-iack-rtt9ms-10KB-h3" / "1"
    (run / "logs").mkdir(parents=True)
    (run / "server").mkdir()
    site = sysconfig.get_paths()["purelib"]
    (run / "logs" / "server.stderr").write_text(
        f'  File "{site}/aioquic/quic/logger.py", line 329\n  File "{tidy.REPO_ROOT}/src/quicack/testbed/server.py", '
        'line 183\n',
        encoding="utf-8",
    )
    (run / "logs" / "client.stdout").write_text("", encoding="utf-8")
    (run / "logs" / "impairment.json").write_text('{"c2s": {"delay_ms": 4.5}}', encoding="utf-8")
    (run / "server" / "server_info.json").write_text('{"warm_up_ms": 92.8}', encoding="utf-8")
    tidy.write_run_json(run, {"status": "ok", "impairment": {"c2s": {"delay_ms": 4.5}}})

    assert tidy.tidy_raw(tmp_path) == 1 and tidy.tidy_raw(tmp_path) == 0
    folded = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert set(folded["process_output"]) == {"server.stderr"}
    assert folded["process_output"]["server.stderr"] == (
        '  File "<site-packages>/aioquic/quic/logger.py", line 329\n  File "src/quicack/testbed/server.py", line 183\n'
    )
    assert folded["server_info"] == {"warm_up_ms": 92.8} and folded["impairment"] == {"c2s": {"delay_ms": 4.5}}
    assert not (run / "logs").exists() and not (run / "server" / "server_info.json").exists()


def test_tidy_drops_a_server_keylog_only_when_the_client_keylog_holds_its_secrets(tmp_path: Path) -> None:
    """A recorded run's keylog as both keylogs: the server's goes, and its emptied folder; a server keylog with
    a secret the client's lacks (the keylog of another run of the same group) stays."""
    import shutil

    from quicack.testbed import tidy

    group = (
        Path(__file__).resolve().parent.parent
        / "data"
        / "sample"
        / "raw"
        / "quic-go_aioquic"
        / "noloss-iack-rtt9ms-10KB-h3"
    )
    duplicate, own = tmp_path / "1", tmp_path / "2"
    for run, server_source in (
        (duplicate, group / "1" / "client" / "keys.log"),
        (own, group / "2" / "client" / "keys.log"),
    ):
        (run / "client").mkdir(parents=True)
        (run / "server").mkdir()
        shutil.copy(group / "1" / "client" / "keys.log", run / "client" / "keys.log")
        shutil.copy(server_source, run / "server" / "keys.log")
        tidy.write_run_json(run, {"status": "ok"})
    assert tidy.drop_redundant_server_keylog(duplicate) and not (duplicate / "server").exists()
    assert not tidy.drop_redundant_server_keylog(own) and (own / "server" / "keys.log").exists()
    assert (duplicate / "client" / "keys.log").exists()


def test_kept_runs_are_read_from_the_recorded_group_and_must_all_be_there(tmp_path: Path) -> None:
    import shutil

    from quicack.testbed.run import kept_runs

    testbed = {"dataset": "sample", "server": "quic-go", "clients": ["quinn"], "modes": ["wfc"],
               "scenarios": ["drop_server_flight"], "rtts_ms": [9], "repetitions": 10,
               "kept_repetitions": 3}  # fmt: skip
    (group,) = expand(testbed)
    recorded = REPO / "data" / "sample" / "raw" / group.key
    copy = tmp_path / group.key
    copy.mkdir(parents=True)
    shutil.copy(recorded / "group.json", copy / "group.json")
    for rep in (1, 2, 3):
        shutil.copytree(recorded / str(rep), copy / str(rep), ignore=shutil.ignore_patterns("*.gz", "*.log"))
    summary, runs = kept_runs(group, tmp_path)
    # The new repetitions take the drop list the kept ones were calibrated with (WFC: the server flight but its first
    # datagram).
    assert summary["calibration"]["drop_to_client"] == [2]
    assert [r["repetition"] for r in runs] == [1, 2, 3] and {r["status"] for r in runs} == {"ok"}
    shutil.rmtree(copy / "3")
    with pytest.raises(FileNotFoundError, match="kept repetition 3"):
        kept_runs(group, tmp_path)
