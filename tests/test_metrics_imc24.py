"""imc24 testbed metrics on the real embedded dataset (data/sample/raw): TTFB of the response body, first PTO, default
PTO, second flight, coalescence, server ACK delay, retransmissions, guidelines.

The tables are built with the pipeline's own stage functions (once per test run: conftest.sample_tables) on four run
groups."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from quicack.metrics import guidelines, summary
from quicack.metrics.coalescence import coalescence_patterns
from quicack.metrics.selection import second_flight_runs
from quicack.metrics.server_ack_delay import first_server_acks, server_ack_delay_table
from quicack.reference import paper_table
from quicack.stages import ingest
from tests.conftest import SAMPLE_RAW

GROUPS = ("quic-go_aioquic", "quic-go_quic-go", "quic-go_ngtcp2", "quic-go_quinn")


@pytest.fixture(scope="module")
def tables(sample_tables) -> dict[str, pl.DataFrame]:
    return sample_tables(GROUPS, ("runs", "packets", "frames", "datagrams", "connections", "handshake_runs"))


def captured_runs(tables: dict[str, pl.DataFrame]) -> pl.Series:
    """The runs with a client-side capture (the added no-loss repetitions at 9 ms keep the client's qlog only)."""
    return tables["packets"].filter((pl.col("source") == "pcap") & (pl.col("vantage") == "sim_left"))["run_id"].unique()


def one(frame: pl.DataFrame, **where) -> dict:
    rows = frame.filter(*[pl.col(k) == v for k, v in where.items()])
    assert rows.height == 1, (where, rows)
    return rows.row(0, named=True)


def test_runs_carry_the_drop_lists_and_the_calibration(tables):
    runs = tables["runs"]
    row = one(runs, run_id="quic-go_quic-go/drop_client_flight-wfc-rtt100ms-10KB-h3/3")
    # The second client flight is quic-go's static mapping (imc24 Table 4), the same for every mode and RTT: its
    # one-datagram ClientHello (X25519 alone) is datagram 1, and v0.65 sends the flight in two datagrams.
    assert (row["drop_to_client"], row["drop_to_server"]) == ("", "2_3")
    assert (row["calibrated_first_server_flight"], row["calibrated_second_client_flight"]) == (None, "2_3")
    lost_flight = runs.filter(pl.col("scenario") == "drop_client_flight")
    assert (
        lost_flight.group_by("client_impl").agg(pl.col("drop_to_server").n_unique())["drop_to_server"].to_list()
        == [1] * 4
    )
    server_row = one(runs, run_id="quic-go_quic-go/drop_server_flight-iack-rtt9ms-10KB-h3/1")
    # IACK: one instant ACK (datagram 1), then the ServerHello flight in datagrams 2-3, all of it dropped.
    assert (server_row["drop_to_client"], server_row["calibrated_first_server_flight"]) == ("2_3", "2_3")
    # No calibration in no-loss runs: null, not an invented empty list.
    assert (
        runs.filter(pl.col("scenario") == "noloss")["calibrated_second_client_flight"].null_count()
        == runs.filter(pl.col("scenario") == "noloss").height
    )


def test_ttfb_is_the_response_body_and_qlog_agrees_with_the_capture(tables):
    client = tables["connections"].filter(pl.col("vantage") == "client").join(tables["runs"], on="run_id")
    qlogged = client.filter(pl.col("ttfb_ms").is_not_null() & pl.col("ttfb_capture_ms").is_not_null())
    # aioquic, quic-go, ngtcp2: every 10 KB run has both; the client receives what its side of
    # the link captured a fraction of a millisecond earlier.
    qlog_frame_clients = ("aioquic", "quic-go", "ngtcp2")
    small_runs = tables["runs"].filter(
        (pl.col("file_bytes") == 10240) & (pl.col("status") == "ok") & pl.col("run_id").is_in(captured_runs(tables))
    )
    expected = small_runs.filter(pl.col("client_impl").is_in(qlog_frame_clients)).height
    assert expected > 100 and qlogged.filter(pl.col("file_bytes") == 10240).height == expected
    difference = qlogged["ttfb_qlog_minus_capture_ms"]
    # A client process may stall now and then (one ngtcp2 run logged its first response datagrams 55 ms after they
    # arrived): at most one run in a hundred.
    assert abs(difference.median()) < 1.0 and (difference.abs() >= 3.0).sum() <= difference.len() / 100
    # The 10 MB transfers were captured with a 128 B snap length: the body packets are not
    # decrypted, so the capture cannot tell when the body began (null, not a later guess).
    transfers = client.filter(pl.col("file_bytes") > 1_000_000)
    assert transfers.height > 0 and transfers["ttfb_capture_ms"].null_count() == transfers.height
    # quinn's qlog has no frames: qlog TTFB unknown, capture TTFB still there.
    quinn = client.filter(
        (pl.col("client_impl") == "quinn")
        & (pl.col("file_bytes") == 10240)
        & pl.col("run_id").is_in(captured_runs(tables))
    )
    assert quinn["ttfb_ms"].null_count() == quinn.height and quinn["ttfb_capture_ms"].null_count() == 0
    # HTTP/3: quic-go's server sends the response's HEADERS frame (83 bytes) in a STREAM frame of its own and the body
    # from offset 83 on: TTFB is the arrival of the frame that holds the body's first byte, not of the first STREAM
    # frame on stream 0, nor of the server's SETTINGS (stream 3).
    run = "quic-go_quic-go/noloss-iack-rtt9ms-10KB-h3/1"
    frames = tables["frames"].filter((pl.col("run_id") == run) & (pl.col("source") == "qlog")
                                     & (pl.col("vantage") == "client") & (pl.col("event") == "received"))  # fmt: skip
    settings = frames.filter(pl.col("stream_id") == 3)["time_ms"].min()
    request = frames.filter(pl.col("stream_id") == 0)
    headers_only = request.filter(pl.col("offset") == 0).row(0, named=True)
    body = request.filter(
        (pl.col("offset") <= headers_only["length"]) & (pl.col("offset") + pl.col("length") > headers_only["length"])
    )
    ttfb = one(client, run_id=run)["ttfb_ms"]
    assert headers_only["length"] == 83 and ttfb == body["time_ms"].min() > headers_only["time_ms"] and ttfb > settings


def test_body_start_is_the_same_for_every_response_of_the_same_size(tables):
    """final_size - file_bytes: HEADERS plus the DATA frame header. quic-go's http3 file server sends status,
    content length and type, Last-Modified, Date and Accept-Ranges: 83 or 84 bytes before the body (the Date's
    QPACK Huffman code varies by a byte with the second), for every 10 KB HTTP/3 response; 0 would mean hq."""
    from quicack.metrics.ttfb import body_start_offsets

    starts = body_start_offsets(tables["runs"], tables["frames"]).join(tables["runs"], on="run_id")
    small = starts.filter(pl.col("file_bytes") == 10240)
    # Every ok 10 KB run, except quinn's runs without a capture (its qlog has no frames: no FIN seen).
    ok_small_runs = tables["runs"].filter(
        (pl.col("file_bytes") == 10240)
        & (pl.col("status") == "ok")
        & (pl.col("run_id").is_in(captured_runs(tables)) | (pl.col("client_impl") != "quinn"))
    )
    assert small.height == ok_small_runs.height > 100 and set(small["body_start"].unique().to_list()) <= {83, 84}


def test_ttfb_skips_a_headers_only_packet(tables):
    """Moving the body start beyond the first frame moves TTFB to the next frame: the offset rule,
    not 'first STREAM frame', decides."""
    from quicack.metrics.ttfb import ttfb_by_source

    run = "quic-go_quic-go/noloss-iack-rtt9ms-10KB-h3/1"
    runs = tables["runs"].filter(pl.col("run_id") == run)
    frames = tables["frames"].filter(pl.col("run_id") == run)
    packets = tables["packets"].filter(pl.col("run_id") == run)
    normal = ttfb_by_source(runs, frames, packets).row(0, named=True)
    # Pretend the file is 2000 bytes shorter: the body then starts in the second or later frame.
    shorter = ttfb_by_source(runs.with_columns(pl.col("file_bytes") - 2000), frames, packets).row(0, named=True)
    assert shorter["ttfb_ms"] > normal["ttfb_ms"] and shorter["ttfb_capture_ms"] > normal["ttfb_capture_ms"]


def test_first_pto_is_shorter_with_instant_ack(tables):
    handshakes = tables["handshake_runs"]
    improvement = summary.pto_improvement(handshakes)
    for client in ("quic-go", "aioquic"):
        row = one(improvement, client_impl=client, rtt_ms=9.0)
        assert row["iack_median_ms"] < row["wfc_median_ms"]
        assert 1.0 < row["pto_improvement_ms"] < 30.0
    recomputed = one(summary.pto_improvement(handshakes, "first_pto_ms"), client_impl="quic-go", rtt_ms=9.0)
    assert recomputed["pto_improvement_ms"] > 1.0
    # Logged initial estimator states (ngtcp2, quinn log 333 ms before any packet arrived) are no
    # RTT samples: the first logged PTO is near 3-4 RTT, not ~1 s.
    for client in ("ngtcp2", "quinn"):
        assert one(improvement, client_impl=client, rtt_ms=9.0)["iack_median_ms"] < 100.0


def test_stack_delay_between_instant_ack_and_server_hello(tables):
    handshakes = tables["handshake_runs"].filter(pl.col("scenario") == "noloss")
    assert handshakes.filter(pl.col("mode") == "iack")["iack"].all()
    assert not handshakes.filter(pl.col("mode") == "wfc")["iack"].any()
    # WFC coalesces ACK and ServerHello; IACK shows the server's key/TLS work in between.
    assert (handshakes.filter(pl.col("mode") == "wfc")["ack_to_server_hello_ms"] == 0).all()
    delays = summary.stack_delay(tables["handshake_runs"])
    assert delays["iack_ack_to_server_hello_ms"].is_between(0.5, 10.0).all()


def test_default_pto_inferred_where_no_rtt_sample_was_possible(tables):
    by_client = summary.default_pto_by_client(tables["handshake_runs"])
    paper = paper_table("imc24", "tab04")
    # imc24 Table 4: aioquic and quic-go 200 ms.
    for client in ("aioquic", "quic-go"):
        row = one(by_client, client_impl=client)
        assert abs(row["default_pto_ms"] - one(paper, client=client)["default_pto_ms"]) < 5.0
    # ngtcp2 probes only in the default_pto scenario (Δt = 1.5 s): after ~1 s, Debian's ngtcp2
    # 0.12.1 with its 333 ms initial RTT (the paper's newer ngtcp2: 300 ms). Every other run
    # gives a lower bound, and it must not contradict the measured value.
    ngtcp2 = one(by_client, client_impl="ngtcp2")
    assert abs(ngtcp2["default_pto_ms"] - 999.0) < 10.0 and ngtcp2["runs_with_probe"] >= 3
    assert 300.0 < ngtcp2["default_pto_lower_bound_ms"] < ngtcp2["default_pto_ms"]


def test_second_flight_datagrams(tables):
    # Table 4's runs (the small-certificate second-client-flight loss): the other scenarios' baselines show
    # longer flights (with the large certificates, ACKs of the amplification-limited server flight come first).
    flights = summary.second_flight_by_client(second_flight_runs(tables["handshake_runs"]))
    # One static mapping per client: both modes drop the same datagrams. aioquic's begins 2, 3, 4 (its
    # calibration baselines had one more, interleaved ACK datagram: 2_3_4_5).
    for client in ("aioquic", "quic-go"):
        assert (
            one(flights, client_impl=client, mode="iack")["second_flight_datagrams"]
            == one(flights, client_impl=client, mode="wfc")["second_flight_datagrams"]
        )
    assert one(flights, client_impl="aioquic", mode="wfc")["second_flight_datagrams"].startswith("2_3_4")
    # quic-go's ClientHello fits one datagram (X25519 alone), so its second flight starts at datagram 2.
    assert one(flights, client_impl="quic-go", mode="wfc")["second_flight_datagrams"].startswith("2")


def test_coalescence_of_the_first_server_flight(tables):
    patterns = coalescence_patterns(tables["runs"], tables["packets"], tables["frames"])
    for client in ("aioquic", "quic-go", "ngtcp2", "quinn"):
        wfc = one(patterns, client_impl=client, mode="wfc", direction="s2c", datagram_index=1)
        assert (
            wfc["content"] == "initial[ack,crypto]+handshake[crypto]" and wfc["runs_with_pattern"] == wfc["runs"] == 2
        )
        iack = one(patterns, client_impl=client, mode="iack", direction="s2c", datagram_index=1)
        assert iack["content"] == "initial[ack]"


def test_retransmissions_and_pto_expiries(tables):
    handshakes = tables["handshake_runs"]
    # At 1 ms RTT (the Δt sweep's noloss runs) ngtcp2 resends one packet and quic-go probes once: a first PTO
    # of ~3 × a 2–3 ms first sample is close to the handshake's own processing time.
    noloss = handshakes.filter((pl.col("scenario") == "noloss") & (pl.col("rtt_ms") >= 9.0))
    assert noloss["client_retransmitted_packets"].sum() == 0 and noloss["server_retransmitted_packets"].sum() == 0
    # Dropping the ServerHello flight after an instant ACK: quic-go probes with PINGs (no data resent), at ~45 and
    # ~113 ms, until the server's PTO (quic-go: 200 ms default, no RTT sample) resends the flight.
    run = one(handshakes, run_id="quic-go_quic-go/drop_server_flight-iack-rtt9ms-10KB-h3/1")
    assert run["client_pto_expiries"] == 2 and run["client_retransmitted_packets"] == 0
    # quic-go's PTO sends its Initial probe twice (RFC 9002 §6.2.4 allows two): the second copy is spurious.
    assert run["server_pto_expiries"] == 1 and run["server_spurious_retransmissions"] == 1
    assert 195.0 < run["server_first_probe_ms"] < 215.0
    # Without loss no endpoint waits for a timer (at most a stray run).
    assert noloss["client_pto_expiries"].sum() <= 2 and noloss["server_pto_expiries"].sum() <= 2
    # quinn and ngtcp2 log pto_count faithfully: the capture inference agrees in most runs.
    logged = handshakes.filter(
        pl.col("client_impl").is_in(["quinn", "ngtcp2"]) & pl.col("client_pto_expiries_logged").is_not_null()
    )
    agreement = (logged["client_pto_expiries"] == logged["client_pto_expiries_logged"]).mean()
    assert logged.height > 100 and agreement > 0.8
    # connections carries the same counts per endpoint.
    connections = tables["connections"].filter(pl.col("run_id") == run["run_id"])
    assert one(connections, vantage="client")["pto_expiries"] == 2
    assert one(connections, vantage="server")["pto_expiries"] == 1


def test_pto_expiries_from_the_client_qlog_equal_the_captures_where_both_are_kept(tables):
    """The capture's probe rule on the client's own qlog (pto.client_pto_expiries_from_qlog) stands in for the
    capture where a run keeps the qlog alone (the dataset 'paper'): on the embedded runs that keep both it gives the
    capture's count in every amplification run of aioquic and quic-go (the clients of imc24-4.1-fig05-client-probes;
    aioquic logs no pto_count, quic-go's logged count misses some), and in most of the others; quinn's qlog logs no
    frames, so it has no count rather than zero."""
    handshakes = tables["handshake_runs"].filter(
        pl.col("client_pto_expiries").is_not_null() & pl.col("scenario").is_in(["amplification", "drop_server_flight"])
    )
    claim = handshakes.filter(
        pl.col("client_impl").is_in(["aioquic", "quic-go"]) & (pl.col("scenario") == "amplification")
    )
    assert claim.height >= 12 and (claim["client_pto_expiries_qlog"] == claim["client_pto_expiries"]).all()
    assert claim["client_pto_expiries"].sum() >= 12  # every one probes at least once
    quic_go = claim.filter(pl.col("client_impl") == "quic-go")
    assert (quic_go["client_pto_expiries_logged"] < quic_go["client_pto_expiries"]).any()
    libraries = handshakes.filter(pl.col("client_impl") != "quinn")
    assert (libraries["client_pto_expiries_qlog"] == libraries["client_pto_expiries"]).mean() > 0.9
    assert handshakes.filter(pl.col("client_impl") == "quinn")["client_pto_expiries_qlog"].null_count() == (
        handshakes.filter(pl.col("client_impl") == "quinn").height)


def test_rtt_samples_exposed_versus_possible(tables):
    exposure = summary.rtt_sample_exposure(tables["handshake_runs"])
    # 10 MB transfer: aioquic exposes every sample; ngtcp2 updates its logged estimate far less
    # often than it gets newly acknowledging ACKs; quinn's qlog has no frames to recompute from.
    aioquic = one(exposure, client_impl="aioquic")
    assert aioquic["rtt_samples_rfc9002"] > 10 and aioquic["exposed_share"] == 1.0
    assert one(exposure, client_impl="ngtcp2")["exposed_share"] < 0.5
    quinn = one(exposure, client_impl="quinn")
    assert quinn["rtt_samples_rfc9002"] is None and quinn["rtt_samples_logged"] > 10


def test_summary_counts_failed_runs_instead_of_using_them(tables):
    handshakes = tables["handshake_runs"]
    run = "quic-go_quic-go/noloss-iack-rtt9ms-10KB-h3/1"
    failed = handshakes.with_columns(
        pl.when(pl.col("run_id") == run).then(pl.lit("failed")).otherwise(pl.col("status")).alias("status")
    )
    row = one(
        summary.summarize(failed, "ttfb_capture_ms"), client_impl="quic-go", mode="iack", scenario="noloss", rtt_ms=9.0
    )
    assert (row["runs"], row["failed_runs"], row["missing_runs"]) == (2, 1, 0)
    assert row["q25"] <= row["median"] <= row["q75"]
    # quinn's qlog has no frames, so no TTFB from it: missing, counted, not used.
    quinn = one(
        summary.summarize(handshakes, "ttfb_ms"), client_impl="quinn", mode="iack", scenario="noloss", rtt_ms=9.0
    )
    assert (quinn["runs"], quinn["failed_runs"], quinn["missing_runs"]) == (0, 0, 3) and quinn["median"] is None


def test_guidelines_follow_the_measured_ttfb(tables):
    by_scenario = guidelines.guidelines_by_scenario(tables["handshake_runs"])
    # imc24 §4.2 / Table 2: losing the first server flight after the first datagram favours WFC
    # (the server gets an RTT sample); losing the second client flight favours IACK.
    assert one(by_scenario, scenario="drop_server_flight")["preferred"] == "wfc"
    assert one(by_scenario, scenario="drop_client_flight")["preferred"] == "iack"
    # Without loss and with Δt = 0 neither mode matters (Table 2: it depends on Δt vs 3 RTT).
    assert one(by_scenario, scenario="noloss")["preferred"] == "tie"
    per_configuration = guidelines.guidelines(tables["handshake_runs"])
    row = one(per_configuration, client_impl="quic-go", scenario="drop_server_flight", rtt_ms=9.0)
    assert row["preferred"] == "wfc" and row["iack_advantage_ms"] < -100.0


def test_server_ack_delay_per_space_and_repetition(tables):
    acks = first_server_acks(tables["frames"]).join(tables["runs"], on="run_id")
    # quic-go writes ACK Delay 0 into its Initial ACKs (imc24 Table 3: 0.0), the instant ACK and the ACK coalesced with
    # the ServerHello alike, whatever time passed.
    initial = acks.filter(pl.col("pn_space") == "initial")
    assert initial.height > 100 and (initial["ack_delay_ms"] == 0.0).all()
    table = server_ack_delay_table(tables["runs"], tables["frames"])
    assert table["server_impl"].to_list() == ["quic-go"]
    assert {"initial_1", "initial_2", "initial_3"} <= set(table.columns)
    by_mode = server_ack_delay_table(tables["runs"], tables["frames"], by=("server_impl", "mode"))
    # Its IACK and WFC runs, and quic-go as released (mode null: the handshake test case of Table 3).
    assert set(by_mode["mode"].to_list()) == {"iack", "wfc", None} and (by_mode["initial_1"] == 0.0).all()


def test_server_ack_delay_from_a_qir_layout_capture_without_run_json(tmp_path):
    """QIR public logs: <server>_<client>/<testcase>/{sim,client,server}, no run.json."""
    source = SAMPLE_RAW / "quic-go_quic-go" / "noloss-wfc-rtt9ms-10KB-h3" / "1"
    run = tmp_path / "raw" / "aioquic_quic-go" / "handshake"
    # Captures and keys only, as the QIR publishes them for handshake tests.
    shutil.copytree(source / "sim", run / "sim")
    # (the embedded run keeps the client's keylog only: the server's held the same secrets)
    for side in ("client", "server"):
        (run / side).mkdir()
        if (source / side / "keys.log").exists():
            shutil.copy(source / side / "keys.log", run / side / "keys.log")
    ingested = ingest.ingest_group(tmp_path / "raw", "aioquic_quic-go", "qir")
    table = server_ack_delay_table(ingested["runs"], ingested["frames"])
    row = one(table, server_impl="aioquic")
    assert row["initial_1"] is not None and 0.0 <= row["initial_1"] < 10.0
