"""Chromium and Firefox as HTTP/3 clients of the testbed (quicack.testbed.browsers), on real recorded downloads.

tests/data/browsers/raw: a 10 KB download by each browser from the stock quic-go server (9 ms RTT), both captures and
every log whole. tests/data/browser_acks/raw: a 1 MB download each (40 ms RTT, 10 Mbit/s), the client-side capture with
the server's datagrams cut to 96 bytes. Both recorded by tests/tools/record_browsers.py. The tests marked ``testbed``
record a download of their own (root, the browsers installed).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from quicack.figures.ack_policy_tables import ackfreq22_tab02_ack_policies
from quicack.layout import run_groups
from quicack.metrics.ack_policy import ACK_FRAMES, captured_acks
from quicack.metrics.ack_runs import quic_ack_runs
from quicack.metrics.connections import connections_table
from quicack.metrics.handshake import default_pto_probe, first_flight_end
from quicack.metrics.rtt import recompute_rtt_samples
from quicack.models.recovery import RecoveryParams
from quicack.stages.ingest import ingest_group
from quicack.testbed import browsers
from quicack.testbed.certs import SERVER_NAME, cert_paths
from quicack.testbed.clients import CHROMIUM_NETLOG, ClientRequest, client_command, confined_to_its_flow

DATA = Path(__file__).resolve().parent / "data"
WHOLE = DATA / "browsers" / "raw"
ACKS = DATA / "browser_acks" / "raw"
LATE_HELLO = DATA / "browser_imc24" / "raw"


def _tables(raw: Path) -> dict[str, pl.DataFrame]:
    parts: dict[str, list[pl.DataFrame]] = {}
    for group in run_groups(raw):
        for name, frame in ingest_group(raw, group, raw.parent.name).items():
            parts.setdefault(name, []).append(frame)
    return {name: pl.concat(frames, how="vertical_relaxed") for name, frames in parts.items()}


@pytest.fixture(scope="module")
def whole() -> dict[str, pl.DataFrame]:
    return _tables(WHOLE)


@pytest.fixture(scope="module")
def acks() -> dict[str, pl.DataFrame]:
    return _tables(ACKS)


def _run_of(tables: dict[str, pl.DataFrame], browser: str) -> str:
    (run_id,) = tables["runs"].filter(pl.col("client_impl") == browser)["run_id"].to_list()
    return run_id


# -- how a browser is run -------------------------------------------------------------------------------------------


def test_client_command_runs_the_browser_driver_with_the_servers_chain(tmp_path: Path) -> None:
    chain = cert_paths("large").chain
    req = ClientRequest(impl="chromium", url="https://198.19.0.2:443/1MB", app_protocol="h3",
                        download_dir=tmp_path / "dl", keylog_path=tmp_path / "client" / "keys.log",
                        qlog_dir=tmp_path / "client" / "qlog", timeout_s=30, server_chain=chain)  # fmt: skip
    argv, env = client_command(req)
    assert argv[1:3] == ["-m", "quicack.testbed.browsers"] and env == {}
    assert argv[argv.index("--netlog") + 1] == str(tmp_path / "client" / CHROMIUM_NETLOG)
    assert argv[argv.index("--server-chain") + 1] == str(chain) and argv[-1] == req.url
    assert confined_to_its_flow("chromium") and confined_to_its_flow("firefox") and not confined_to_its_flow("quic-go")
    with pytest.raises(ValueError, match="does not support 'hq'"):
        client_command(ClientRequest(**{**req.__dict__, "impl": "firefox", "app_protocol": "hq"}))


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl computes the reference SPKI hash")
@pytest.mark.parametrize("size", ["small", "large", "xlarge"])
def test_chromium_accepts_the_key_of_the_leaf_the_server_presents(tmp_path: Path, size: str) -> None:
    """The SPKI hash Chromium is given equals what openssl computes from the same chain's leaf (the recipe of
    Chromium's --ignore-certificate-errors-spki-list documentation)."""
    chain = cert_paths(size).chain
    pubkey = subprocess.run(
        ["openssl", "x509", "-in", str(chain), "-pubkey", "-noout"], capture_output=True, check=True
    ).stdout
    der = subprocess.run(
        ["openssl", "pkey", "-pubin", "-outform", "der"], input=pubkey, capture_output=True, check=True
    ).stdout
    digest = subprocess.run(
        ["openssl", "dgst", "-sha256", "-binary"], input=der, capture_output=True, check=True
    ).stdout
    expected = (
        subprocess.run(["openssl", "base64"], input=digest, capture_output=True, check=True).stdout.decode().strip()
    )
    dl = browsers.download_from_url("chromium", "https://198.19.0.2:443/10KB", tmp_path / "k", tmp_path / "q",
                                    tmp_path / "d", 30, None, chain)  # fmt: skip
    argv = browsers.chromium_command(Path("/usr/lib/chromium/chromium"), dl, tmp_path)
    assert f"--ignore-certificate-errors-spki-list={expected}" in argv
    assert f"--host-resolver-rules=MAP {SERVER_NAME} 198.19.0.2, MAP * ~NOTFOUND" in argv
    assert f"--origin-to-force-quic-on={SERVER_NAME}:443" in argv and argv[-1] == f"https://{SERVER_NAME}:443/10KB"


@pytest.mark.skipif(shutil.which("certutil") is None, reason="certutil (libnss3-tools) builds Firefox's NSS database")
def test_the_firefox_profile_trusts_the_servers_ca_and_forces_http3(tmp_path: Path) -> None:
    dl = browsers.download_from_url("firefox", "https://198.19.0.2:8443/1MB", tmp_path / "k", tmp_path / "q",
                                    tmp_path / "d", 30, None, cert_paths("xlarge").chain)  # fmt: skip
    argv = browsers.firefox_command(Path("/usr/lib/firefox-esr/firefox-esr"), dl, tmp_path)
    assert argv[1:4] == ["--headless", "--no-remote", "--marionette"] and argv[-1] == f"https://{SERVER_NAME}:8443/1MB"
    listed = subprocess.run(
        ["certutil", "-L", "-d", f"sql:{tmp_path / 'profile'}"],
        capture_output=True,
        text=True,
        check=True,
        encoding="utf-8",
    )
    assert "quicack test CA" in listed.stdout and "C,," in listed.stdout
    user_js = (tmp_path / "profile" / "user.js").read_text(encoding="utf-8")
    for pref in ('"network.http.http3.alt-svc-mapping-for-testing", "quicack.test;h3=:8443"',
                 '"network.dns.forceResolve", "198.19.0.2"', '"network.http.http3.enable_qlog", true',
                 '"network.http.http3.disable_when_third_party_roots_found", false'):  # fmt: skip
        assert f"user_pref({pref});" in user_js


def test_a_download_counts_only_once_the_browser_has_left_no_partial_file(tmp_path: Path) -> None:
    """Hand-made folder states, as the browsers leave them while saving (seen while recording): Firefox first
    creates an empty placeholder beside ``<name>.<random>.part``, Chromium writes ``<name>.crdownload``."""
    assert browsers.finished_download(tmp_path, "10MB") is None
    (tmp_path / "10MB.crdownload").write_bytes(b"x")
    assert browsers.finished_download(tmp_path, "10MB") is None
    (tmp_path / "10MB.crdownload").unlink()
    (tmp_path / "10MB").write_bytes(b"")
    (tmp_path / "10MB.49gYGLbt.part").write_bytes(b"x" * 10)
    assert browsers.finished_download(tmp_path, "10MB") is None
    (tmp_path / "10MB.49gYGLbt.part").replace(tmp_path / "10MB")
    assert browsers.finished_download(tmp_path, "10MB") == tmp_path / "10MB"


# -- recorded downloads ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [WHOLE, ACKS], ids=["10KB", "1MB"])
def test_every_download_arrived_whole_and_names_the_browser(raw: Path) -> None:
    run_jsons = sorted(raw.glob("*/*/*/run.json"))
    assert run_jsons, f"no recorded run under {raw}"
    for run_json in run_jsons:
        run = json.loads(run_json.read_text(encoding="utf-8"))
        assert run["status"] == "ok" and run["downloaded"]["sha256"] == run["file_sha256"], run_json
        assert run["downloaded"]["bytes"] == run["file_bytes"]
        assert run["testbed"]["client_confined_to_its_flow"]
        name = {"chromium": "Chromium ", "firefox": "Firefox "}[run["client_impl"]]
        assert run["client_version"].startswith(name) and "(Debian " in run["client_version"]


def test_every_browser_packet_decrypts_at_both_capture_points(whole) -> None:
    """Both browsers' captures decrypt completely with their keylogs (the server's keylog is the same secrets);
    tests/test_pcap_tshark.py checks the same captures packet by packet against tshark."""
    quic = whole["packets"].filter((pl.col("source") == "pcap") & (pl.col("packet_type") != "datagram_padding"))
    assert set(quic["vantage"]) == {"sim_left", "sim_right"}
    per_run = quic.group_by("run_id", "vantage", "direction").agg(pl.len(), pl.col("decrypted").all())
    assert per_run.height == 8 and per_run["decrypted"].all()
    assert whole["ingest_issues"].filter(pl.col("severity") == "error").is_empty()


def _frames_per_packet(frames: pl.DataFrame) -> pl.DataFrame:
    return (
        frames.sort("frame_index")
        .group_by("pn_space", "packet_number", maintain_order=True)
        .agg(pl.col("frame_type").filter(pl.col("frame_type") != "padding"), pl.col("ack_delay_ms").drop_nulls())
        .sort("pn_space", "packet_number")
    )


@pytest.mark.parametrize("direction, event", [("c2s", "sent"), ("s2c", "received")])
def test_firefoxs_neqo_qlog_logs_the_packets_and_frames_its_capture_shows(whole, direction: str, event: str) -> None:
    """Every packet Firefox sent (received) is in its qlog with the same frames and ACK Delay as in the capture —
    neqo logs the ACK Delay field undecoded (/1000, not scaled by the exponent): read as 1/8 of the wire value
    before quicack.qlog.profiles knew it."""
    run_id = _run_of(whole, "firefox")
    frames = whole["frames"].filter((pl.col("run_id") == run_id) & (pl.col("direction") == direction))
    logged = _frames_per_packet(
        frames.filter((pl.col("source") == "qlog") & (pl.col("vantage") == "client") & (pl.col("event") == event))
    )
    captured = _frames_per_packet(frames.filter(pl.col("vantage") == "sim_left"))
    assert logged.height == captured.height > 5
    assert logged["frame_type"].to_list() == captured["frame_type"].to_list()
    for ours, wire in zip(logged["ack_delay_ms"].to_list(), captured["ack_delay_ms"].to_list(), strict=True):
        assert ours == pytest.approx(wire, abs=0.001)
    assert any(delays and max(delays) > 1 for delays in captured["ack_delay_ms"].to_list())


def test_a_stream_frame_makes_a_captured_packet_ack_eliciting(whole) -> None:
    """RFC 9002 §2: every frame but ACK, PADDING and CONNECTION_CLOSE elicits an ACK. Firefox's 1-RTT packets with
    nothing but STREAM frames (its HTTP/3 control streams, its request) read as not ack-eliciting from captures
    before the frame walkers counted STREAM; its qlog says they are."""
    run_id = _run_of(whole, "firefox")
    frames = whole["frames"].filter(
        (pl.col("run_id") == run_id) & (pl.col("vantage") == "sim_left") & (pl.col("direction") == "c2s")
    )
    stream_only = frames.group_by("pn_space", "packet_number").agg(
        (pl.col("frame_type") == "stream").all().alias("only")
    )
    stream_only = stream_only.filter(pl.col("only")).select("pn_space", "packet_number")
    packets = (
        whole["packets"]
        .filter((pl.col("run_id") == run_id) & (pl.col("vantage") == "sim_left"))
        .join(stream_only, on=["pn_space", "packet_number"])
    )
    assert packets.height >= 1 and packets["ack_eliciting"].all()


def test_chromium_without_a_qlog_still_has_its_capture_ttfb(whole) -> None:
    """connections has a client row per qlog; Chromium writes none, so its client row comes from the client-side
    capture alone: the TTFB the imc24 figures read (handshake_runs), the qlog-only columns null."""
    connections = connections_table(whole["packets"], whole["frames"], whole["metrics_logged"], whole["endpoints"],
                                    recompute_rtt_samples(whole["packets"], whole["frames"], whole["endpoints"],
                                                          RecoveryParams()), whole["runs"])  # fmt: skip
    client = {row["run_id"]: row for row in connections.filter(pl.col("vantage") == "client").to_dicts()}
    chromium, firefox = client[_run_of(whole, "chromium")], client[_run_of(whole, "firefox")]
    assert chromium["ttfb_capture_ms"] > 9 and chromium["ttfb_ms"] is None and chromium["rtt_samples"] is None
    # Firefox's row is its qlog's, with the same TTFB at both vantage points (its receive path in between).
    assert firefox["ttfb_ms"] >= firefox["ttfb_capture_ms"] > 9


def test_a_clienthello_datagram_sent_late_still_belongs_to_the_first_flight() -> None:
    """tests/data/browser_imc24: Chromium's second ClientHello datagram left 70 ms after the first (a busy machine).
    The first flight ends with it — it carries ClientHello bytes for the first time — so the default PTO is measured
    from there to the probe (which re-sends CRYPTO offsets), not from the first datagram to the second."""
    tables = _tables(LATE_HELLO)
    c2s = (
        tables["datagrams"]
        .filter((pl.col("vantage") == "sim_left") & (pl.col("direction") == "c2s"))
        .sort("datagram_index")
    )
    second_hello_ms, probe_ms = c2s["time_ms"][1], c2s["time_ms"][2]
    assert second_hello_ms > 50 and probe_ms - second_hello_ms > 200
    (end,) = first_flight_end(tables["datagrams"], tables["frames"])["first_flight_end_ms"].to_list()
    assert end == second_hello_ms
    (probe,) = default_pto_probe(tables["datagrams"], tables["frames"]).to_dicts()
    assert probe["default_pto_ms"] == pytest.approx(probe_ms - second_hello_ms)
    assert probe["first_server_datagram_ms"] > probe_ms


def test_chromiums_netlog_is_complete_and_logs_every_ack_the_capture_shows(whole) -> None:
    run_id = _run_of(whole, "chromium")
    netlog = WHOLE / run_id / "client" / CHROMIUM_NETLOG  # run_id: the run's folder below the raw folder
    log = json.loads(gzip.decompress(netlog.read_bytes()))  # a NetLog cut by a kill would not parse
    names = {value: name for name, value in log["constants"]["logEventTypes"].items()}
    sessions = [
        e
        for e in log["events"]
        if names[e["type"]] == "QUIC_SESSION" and e.get("params", {}).get("host") == SERVER_NAME
    ]
    assert len(sessions) == 1
    logged = {
        e["params"]["largest_observed"] for e in log["events"] if names[e["type"]] == "QUIC_SESSION_ACK_FRAME_SENT"
    }
    captured = whole["frames"].filter(
        (pl.col("run_id") == run_id) & (pl.col("vantage") == "sim_left") & (pl.col("direction") == "c2s")
        & pl.col("frame_type").is_in(ACK_FRAMES)
    )  # fmt: skip
    assert captured.height > 5 and set(captured["largest_acked"]) <= logged


# Both browsers acknowledge at once while a packet below the newest is newly missing (Chromium: the 4 packets after a
# gap, kMaxPacketsAfterNewMissing; RFC 9000 13.2.1), so a bottleneck drop in slow start turns a stretch of a live run
# into ACKs of 1 or 2 packets whatever the policy. An ACK whose top range holds at least 5 packets was sent under the
# decimation policy alone.
POLICY_ONLY_FIRST_ACK_RANGE = 4


def _acks_by_phase(frames: pl.DataFrame, run_id: str, policy_only: bool = False) -> tuple[pl.Series, pl.Series]:
    """How far each of the run's captured ACKs moved the largest acknowledged packet (those that moved it), before
    packet 100 and from packet 150 on (room for the ACKs in flight when Chromium switches). ``policy_only`` keeps
    the ACKs sent while no packet was newly missing (see ``POLICY_ONLY_FIRST_ACK_RANGE``)."""
    advance = captured_acks(frames).filter((pl.col("run_id") == run_id) & (pl.col("largest_acked_advance") > 0))
    if policy_only:
        advance = advance.filter(pl.col("first_ack_range") >= POLICY_ONLY_FIRST_ACK_RANGE)
    early = advance.filter(pl.col("largest_acked") < 100)["largest_acked_advance"]
    late = advance.filter(pl.col("largest_acked") >= 150)["largest_acked_advance"]
    return early, late


def _mode(values: pl.Series) -> int:
    return int(values.mode().min())


def test_chromium_thins_its_acks_after_100_packets_and_firefox_does_not(acks) -> None:
    """At 5 Mbit/s and 200 ms RTT (tests/data/browser_acks/testbed.yaml says why these): Chromium acknowledges every
    2nd packet while the first 100 arrive, then every 10th (ackfreq22 Table 2: "2, then 10"; its ACK delay, min(25 ms,
    RTT/4), lets 10 packets arrive); Firefox (neqo) every 2nd throughout, so after the switch it sends more ACKs for the
    same bytes. Firefox's ACKs that cover more than two packets follow its batch reads on a busy machine."""
    chromium_early, chromium_late = _acks_by_phase(acks["frames"], _run_of(acks, "chromium"))
    firefox_early, firefox_late = _acks_by_phase(acks["frames"], _run_of(acks, "firefox"))
    assert chromium_early.median() == 2 and _mode(chromium_late) == 10 and chromium_late.median() >= 8
    assert _mode(firefox_early) == 2 and _mode(firefox_late) == 2 and firefox_late.median() <= 4
    assert firefox_late.len() > chromium_late.len()


def test_table2_measures_both_browsers_in_the_surveys_rows(acks) -> None:
    ack_runs = quic_ack_runs(acks["runs"], acks["datagrams"], acks["packets"], acks["frames"])
    rendered = ackfreq22_tab02_ack_policies(acks["runs"], acks["packets"], acks["frames"], ack_runs)
    rows = {row["implementation"]: row for row in rendered.artefact.to_dicts()}
    # Chromium writes no qlog: measured from the capture, over all its ACKs (both phases: the median lies between).
    assert rows["chrome"]["measured_client"] == "chromium" and rows["chrome"]["measured_from"] == "capture"
    assert 2 < rows["chrome"]["measured_ar"] <= 10 and rows["chrome"]["measured_ar_p90"] == 10
    assert rows["chrome"]["default_ar"] == "2, then 10"
    # Firefox's qlog logs its frames: measured from the qlog.
    assert rows["neqo"]["measured_client"] == "firefox" and rows["neqo"]["measured_from"] == "client qlog"
    assert 2 <= rows["neqo"]["measured_ar"] <= 3 and rows["neqo"]["measured_ar"] < rows["chrome"]["measured_ar"]
    for row in (rows["chrome"], rows["neqo"]):
        assert 55 <= row["measured_ack_bytes"] <= 80  # the paper's 66 and 63 B; one ACK range, 1-byte CIDs or 8


# -- a live download through the testbed ----------------------------------------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root (network namespaces, NFQUEUE, tc)")


@pytest.mark.testbed
@needs_root
@pytest.mark.parametrize("browser", browsers.BROWSERS)
def test_a_browser_downloads_through_the_testbed(tmp_path: Path, browser: str) -> None:
    if browsers.executable(browser) is None or shutil.which("certutil") is None:
        pytest.skip(f"{browser} is not installed (apt-get install {browsers.DEBIAN_PACKAGES[browser]} libnss3-tools)")
    from quicack.pcap.decode import decode_capture
    from quicack.testbed import netns
    from quicack.testbed.run import execute_run
    from quicack.testbed.scenarios import expand

    (group,) = expand({
        "dataset": "browser_test", "server": "quic-go", "clients": [browser], "modes": ["none"],
        "scenarios": ["ack_ratio"], "file": "1MB", "rtts_ms": [200], "bandwidth_mbit": 5, "timeout_s": 90,
        "compress": False, "server_qlog": False,
    })  # fmt: skip
    result = execute_run(group, 1, tmp_path)
    assert result.status == "ok", result.failure_reason
    meta = result.run_json
    assert meta["downloaded"]["sha256"] == meta["file_sha256"]
    job = meta["testbed"]["job"]
    assert not [ns for ns in netns.list_namespaces() if f"-{job}-" in ns], "the run's namespaces are left"
    keylog = result.run_dir / "client" / "keys.log"
    batches = list(decode_capture(result.run_dir / "sim" / "trace_node_left.pcap", [keylog], "live"))
    packets = pl.concat([b.packets for b in batches]).filter(pl.col("packet_type") != "datagram_padding")
    frames = pl.concat([b.frames for b in batches])
    assert packets["decrypted"].all() and set(packets["direction"]) == {"c2s", "s2c"}
    # Only the browser's QUIC flow left its namespace: one client port, no TCP.
    datagrams = pl.concat([b.datagrams for b in batches])
    assert pl.concat([b.tcp_segments for b in batches]).is_empty() and datagrams["direction"].n_unique() == 2
    _early, late = _acks_by_phase(frames.with_columns(pl.lit("live").alias("run_id")), "live", policy_only=True)
    assert late.len() > 10
    # Chromium: every 10th packet after the first 100; neqo: every 2nd (the conditions of tests/data/browser_acks).
    # Only the ACKs of the policy count: the slow-start overshoot of this path drops from 1 to 25 % of the server's
    # packets at the bottleneck, run by run, and each drop is followed by immediate ACKs.
    assert _mode(late) == (10 if browser == "chromium" else 2)
    if browser == "firefox":
        assert list((result.run_dir / "client" / "qlog").glob("*.sqlog")), "Firefox's neqo qlog was not kept"
    else:
        assert (result.run_dir / "client" / CHROMIUM_NETLOG).is_file()
