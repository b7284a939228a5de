"""Server selection of the testbed: the IACK/WFC servers (quic-go with quicack's patch, aioquic) and the others
(imc24 Table 3)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import jsonschema
import pytest
import yaml

from quicack.layout import parse_run_folder
from quicack.testbed.run import load_config
from quicack.testbed.scenarios import SCENARIOS, expand, group_from_json, group_to_json
from quicack.testbed.server_programs import KNOWN_SERVERS, ServerRequest, server_command, server_executable

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "workflow" / "schemas" / "testbed.schema.yaml"


def _cfg(**kw):  # type: ignore[no-untyped-def]
    return {"dataset": "t", "clients": ["aioquic"], "modes": ["iack", "wfc"], "scenarios": ["handshake"],
            "rtts_ms": [30]} | kw  # fmt: skip


def test_other_servers_have_one_group_with_mode_none() -> None:
    groups = expand(_cfg(servers=["aioquic", "quic-go", "quinn", "ngtcp2"]))
    assert sorted(g.key for g in groups) == [
        "aioquic_aioquic/handshake-iack-rtt30ms-10KB-h3",
        "aioquic_aioquic/handshake-wfc-rtt30ms-10KB-h3",
        "ngtcp2_aioquic/handshake-none-rtt30ms-10KB-h3",  # gtlsserver: HTTP/3 only
        "quic-go_aioquic/handshake-iack-rtt30ms-10KB-h3",
        "quic-go_aioquic/handshake-wfc-rtt30ms-10KB-h3",
        "quinn_aioquic/handshake-none-rtt30ms-10KB-hq",  # quinn-server: hq-interop only
    ]
    for g in groups:
        assert (g.mode == "none") == (g.server not in ("aioquic", "quic-go"))
        assert g.cert_size == "small" and g.file_name == "10KB" and g.cert_delay_ms == 0.0


def test_modal_servers_run_as_released_in_mode_none() -> None:
    groups = expand(_cfg(servers=["aioquic", "quic-go"], modes=["none"], scenarios=["amplification"]))
    assert sorted(g.key for g in groups) == ["aioquic_aioquic/amplification-none-rtt30ms-10KB-h3",
                                             "quic-go_aioquic/amplification-none-rtt30ms-10KB-h3"]  # fmt: skip
    assert all(g.cert_delay_ms == 0.0 and g.server_hello_hold_ms == 0.0 for g in groups)


def test_paper_stack_delay_holds_the_serverhello_on_quic_go_only() -> None:
    (group,) = expand(
        _cfg(servers=["quic-go"], modes=["iack"], scenarios=["drop_client_flight"], server_stack_delay=2.9)
    )
    assert group.scenario == "drop_client_flight_paper_stack"
    assert group.server_hello_hold_ms == 2.9 and group.cert_delay_ms == 0.0 and group.calibrate == "client_flight"
    with pytest.raises(ValueError, match="cannot hold its ServerHello"):
        expand(_cfg(servers=["aioquic"], modes=["iack"], scenarios=["noloss"], server_stack_delay="paper"))


def test_client_key_share_applies_to_the_clients_that_take_it() -> None:
    groups = expand(_cfg(servers=["quic-go"], clients=["aioquic", "quic-go", "go-x-net", "quiche", "ngtcp2"],
                         modes=["wfc"], client_key_share="x25519"))  # fmt: skip
    shares = {g.client: g.client_key_share for g in groups}
    assert shares == {"aioquic": None, "quic-go": "x25519", "go-x-net": "x25519", "quiche": "x25519", "ngtcp2": None}


def test_other_server_ignores_cert_delay_and_pairs_without_common_protocol_are_skipped() -> None:
    groups = expand(_cfg(servers=["quinn", "ngtcp2"], clients=["ngtcp2", "go-x-net"], scenarios=["default_pto"]))
    # ngtcp2 client (h3) x quinn server (hq), go-x-net (hq) x ngtcp2 server (h3): no common protocol.
    assert sorted(g.key for g in groups) == [
        "ngtcp2_ngtcp2/default_pto-none-rtt30ms-10KB-h3",
        "quinn_go-x-net/default_pto-none-rtt30ms-10KB-hq",
    ]
    assert all(g.cert_delay_ms == 0.0 for g in groups)  # only the IACK/WFC servers (quic-go, aioquic) take Δt
    assert SCENARIOS["default_pto"].cert_delay_ms == 1500.0


def test_block_server_overrides_top_level_servers() -> None:
    cfg = _cfg(servers=["quinn"], extra=[{"server": "aioquic", "modes": ["wfc"]}])
    assert sorted(g.key for g in expand(cfg)) == [
        "aioquic_aioquic/handshake-wfc-rtt30ms-10KB-h3",
        "quinn_aioquic/handshake-none-rtt30ms-10KB-hq",
    ]


def test_run_folder_of_other_server_has_mode_null(tmp_path: Path) -> None:
    run = tmp_path / "quic-go_aioquic" / "handshake-none-rtt30ms-10KB-h3" / "2"
    (run / "sim").mkdir(parents=True)
    info = parse_run_folder(run)
    assert info["server_impl"] == "quic-go" and info["client_impl"] == "aioquic"
    assert info["mode"] is None and info["scenario"] == "handshake" and info["repetition"] == 2


@pytest.mark.parametrize("name", ["testbed.yaml", "testbed_ci.yaml"])
def test_configs_are_valid(name: str) -> None:
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(load_config(REPO / "config" / name), schema)


def test_sample_config_keeps_every_recorded_group_key() -> None:
    # the browsers' groups are recorded by their own file and named as the embedded dataset's
    # (config/testbed_browsers.yaml)
    keys = {
        g.key for name in ("testbed.yaml", "testbed_browsers.yaml") for g in expand(load_config(REPO / "config" / name))
    }
    raw = REPO / "data" / "sample" / "raw"
    recorded = {p.parent.relative_to(raw).as_posix() for p in raw.rglob("group.json")}
    assert recorded and recorded <= keys
    assert {"quic-go_aioquic/handshake-none-rtt30ms-10KB-h3", "quinn_aioquic/handshake-none-rtt30ms-10KB-hq",
            "ngtcp2_aioquic/handshake-none-rtt30ms-10KB-h3"} <= keys  # fmt: skip


def test_group_json_round_trip() -> None:
    for g in expand(load_config(REPO / "config" / "testbed.yaml")):
        back = group_from_json(group_to_json(g))
        assert back == g and back.key == g.key


@pytest.mark.parametrize("impl", KNOWN_SERVERS)
def test_server_command_writes_keylog_and_qlog(impl: str, tmp_path: Path) -> None:
    if server_executable(impl) is None:
        pytest.skip(f"{impl} server not built/installed")
    req = ServerRequest(impl=impl, host="198.19.0.2", port=443, cert_size="small", www=tmp_path / "www",
                        qlog_dir=tmp_path / "qlog", keylog_path=tmp_path / "keys.log",
                        ready_file=tmp_path / "ready.json", mode="wfc" if impl in ("aioquic", "quic-go") else "none",
                        cert_delay_ms=5.0 if impl == "quic-go" else 0.0)  # fmt: skip
    argv, env = server_command(req)
    text = " ".join(argv)
    assert str(tmp_path / "qlog") in text
    assert str(tmp_path / "keys.log") in text or env.get("SSLKEYLOGFILE") == str(tmp_path / "keys.log")
    if impl != "aioquic":
        assert "small_chain.pem" in text and "small_key.pem" in text
    if impl == "quic-go":
        assert env["QUIC_GO_DISABLE_GSO"] == "true"
        assert argv[argv.index("--mode") + 1] == "wfc" and argv[argv.index("--cert-delay-ms") + 1] == "5"
    if impl == "ngtcp2":
        assert "--max-gso-dgrams=1" in argv


@pytest.mark.testbed
@pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root (network namespaces, NFQUEUE, tc)")
@pytest.mark.parametrize("impl", ["quic-go", "quinn", "ngtcp2"])
def test_real_handshake_run_against_other_server(impl: str, tmp_path: Path) -> None:
    """One short real run per server: the file arrives, run.json says mode null, the server wrote keys and a
    qlog, and the keys decrypt the server's Handshake packets in the capture."""
    if server_executable(impl) is None:
        pytest.skip(f"{impl} server not built/installed")
    from quicack.stages.ingest import ingest_group
    from quicack.testbed.run import run_group

    (group,) = expand(_cfg(servers=[impl], modes=["none"], rtts_ms=[10], timeout_s=15))
    raw = tmp_path / "raw"
    (res,) = run_group(group, raw, log=lambda _msg: None)
    assert res.status == "ok", res.failure_reason
    rj = res.run_json
    assert rj["server_impl"] == impl and rj["mode"] is None and rj["cert_bytes"] == 1212
    assert rj["server_version"] and rj["client_impl"] == "aioquic"
    # The server's keylog, unless the client's holds every line of it (the testbed's tidy step then drops it).
    server_keylog = res.run_dir / "server" / "keys.log"
    secrets = (server_keylog if server_keylog.exists() else res.run_dir / "client" / "keys.log").read_text(
        encoding="utf-8"
    )
    assert secrets.count("SERVER_HANDSHAKE_TRAFFIC_SECRET") == 1
    qlogs = list((res.run_dir / "server" / "qlog").glob("*"))
    assert len(qlogs) == 1 and len(gzip.decompress(qlogs[0].read_bytes())) > 500
    tables = ingest_group(raw, f"{impl}_aioquic", "t")
    assert tables["runs"]["mode"].to_list() == [None]
    frames = tables["frames"]
    hs = frames.filter(
        (frames["source"] == "pcap") & (frames["direction"] == "s2c") & (frames["pn_space"] == "handshake")
    )
    assert hs.height > 0  # decrypted with the server's keylog
    assert tables["ingest_issues"].height == 0, tables["ingest_issues"].to_dicts()


def test_sender_settings_are_what_each_server_can_do() -> None:
    """quiche sends Reno/CUBIC unpaced (quiche 0.30 paces BBR only), quinn always paces, quic-go and ngtcp2 run as they
    are; a config asking otherwise is refused before anything is recorded."""
    block = {"dataset": "t", "clients": ["aioquic"], "modes": ["iack"], "scenarios": ["ack_ratio"], "rtts_ms": [30]}
    (quiche,) = expand(block | {"server": "quiche", "server_congestion_control": "reno", "server_pacing": False})
    assert quiche.key == "quiche_aioquic/ack_ratio-none-rtt30ms-1MB-h3-ccreno-unpaced"
    (quinn,) = expand(block | {"server": "quinn", "server_congestion_control": "newreno"})
    assert quinn.sender_label == "ccnewreno-paced" and quinn.app_protocol == "hq"
    for refused, match in (
        ({"server": "quiche", "server_congestion_control": "reno"}, "cannot pace"),  # server_pacing defaults to true
        ({"server": "quinn", "server_pacing": False}, "always paces"),
        ({"server": "quinn", "server_congestion_control": "reno"}, "newreno, cubic, bbr"),
        ({"server": "quic-go", "server_congestion_control": "cubic"}, "none"),
        ({"server": "ngtcp2", "server_pacing": False}, "no sender settings|always paces"),
    ):
        with pytest.raises(ValueError, match=match):
            expand(block | refused)


def test_quiche_reno_is_newreno_without_hystart_and_recorded_as_sent(tmp_path: Path) -> None:
    from quicack.testbed.server_programs import server_info

    req = ServerRequest(impl="quiche", host="198.19.0.2", port=443, cert_size="small", www=tmp_path / "www",
                        qlog_dir=tmp_path / "qlog", keylog_path=tmp_path / "keys.log",
                        ready_file=tmp_path / "ready.json", congestion_control="reno", pacing=False)  # fmt: skip
    argv, _ = server_command(req) if server_executable("quiche") else (None, None)
    if argv is not None:
        assert argv[argv.index("--cc") + 1] == "reno" and "--no-hystart" in argv
    info = server_info(req)
    assert (info["congestion_control"], info["pacing"], info["hystart"]) == ("reno", False, False)
    cubic = server_info(ServerRequest(**{**req.__dict__, "congestion_control": None}))
    assert (cubic["congestion_control"], cubic["hystart"]) == ("cubic", True)
    quinn = server_info(
        ServerRequest(**{**req.__dict__, "impl": "quinn", "congestion_control": "newreno", "pacing": True})
    )
    assert (quinn["congestion_control"], quinn["pacing"]) == ("newreno", True) and "hystart" not in quinn
