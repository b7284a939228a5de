"""imc24 Fig. 1, Fig. 3 and Tables 2–4 on the real embedded dataset (data/sample/raw): the sequence
diagram's content, the guideline cells against the paper, the server ACK delay table and the
client defaults, built once per module with the pipeline's own stage functions on two groups."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
import pytest

from quicack import parquet_store, recovery, stages
from quicack.figures import imc24_handshake, imc24_tables
from quicack.metrics import guidelines, selection

RAW = Path(__file__).resolve().parent.parent / "data" / "sample" / "raw"
GROUPS = ("aioquic_aioquic", "aioquic_quic-go")


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, pl.DataFrame]:
    parquet = tmp_path_factory.mktemp("imc24_handshake") / "parquet"
    for group in GROUPS:
        stages.ingest_group_stage(RAW, group, "sample", parquet)
        stages.derive_group_stage(parquet, group, recovery.RecoveryParams())
    names = ("runs", "packets", "frames", "datagrams", "handshake_runs")
    return {name: parquet_store.read_table(parquet, name) for name in names}


def one(frame: pl.DataFrame, **where) -> dict:
    rows = frame.filter(*[pl.col(k) == v for k, v in where.items()])
    assert rows.height == 1, (where, rows)
    return rows.row(0, named=True)


IACK_RUN = "aioquic_aioquic/amplification-iack-rtt9ms-10KB-h3/1"
WFC_RUN = "aioquic_aioquic/amplification-wfc-rtt9ms-10KB-h3/2"


def test_fig01_iack_answers_with_an_ack_only_initial_and_wfc_coalesces(tables):
    iack = imc24_handshake.handshake_sequence(tables["packets"], tables["frames"], IACK_RUN)
    wfc = imc24_handshake.handshake_sequence(tables["packets"], tables["frames"], WFC_RUN)
    first = lambda seq, d: seq.filter(pl.col("direction") == d).sort("sent_ms").row(0, named=True)  # noqa: E731
    assert first(iack, "c2s")["content"] == "Initial[CRYPTO(ClientHello)]" and first(iack, "c2s")["sent_ms"] == 0.0
    assert first(iack, "s2c")["content"] == "Initial[ACK]"
    assert first(wfc, "s2c")["content"].startswith("Initial[ACK,CRYPTO(ServerHello)] + Handshake[CRYPTO(EE,Cert)]")
    # One clock for both captures: every datagram arrives after it left, about half the 9 ms RTT later.
    for seq in (iack, wfc):
        delay = (seq["received_ms"] - seq["sent_ms"]).drop_nulls()
        assert delay.len() == seq.height and delay.min() > 3.0 and delay.max() < 12.0
    # Δt = 200 ms: the instant ACK leaves at once, the ServerHello only after the certificate.
    hello = iack.filter(pl.col("server_hello"))["sent_ms"].min()
    assert first(iack, "s2c")["sent_ms"] < 10.0 and 200.0 < hello < 215.0
    # The client's first RTT sample: one RTT with IACK, inflated by Δt with WFC.
    assert 9.0 < imc24_handshake.first_rtt_sample(tables["packets"], tables["frames"], IACK_RUN)["sample_ms"] < 15.0
    assert imc24_handshake.first_rtt_sample(tables["packets"], tables["frames"], WFC_RUN)["sample_ms"] > 200.0


def test_fig01_bursts_merge_and_the_figure_draws(tables):
    sequence = imc24_handshake.handshake_sequence(tables["packets"], tables["frames"], IACK_RUN)
    arrows = imc24_handshake.merge_bursts(sequence)
    assert sum(a["datagrams"] for a in arrows) == sequence.height and len(arrows) < sequence.height
    flight = next(a for a in arrows if "ServerHello" in a["label"])
    assert flight["direction"] == "s2c" and flight["datagrams"] == 5 and "3 × Handshake[CRYPTO]" in flight["label"]
    assert selection.representative_run(tables["handshake_runs"], "aioquic", "amplification", "iack", 9.0).startswith(
        "aioquic_aioquic/amplification-iack-rtt9ms"
    )
    fig = imc24_handshake.handshake_timeline_figure(tables["runs"], tables["packets"], tables["frames"], IACK_RUN, WFC_RUN)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("PTO probe" in t for t in texts) and any("default PTO" in t for t in texts)
    assert any(IACK_RUN in ax.get_title(loc="left") for ax in fig.axes)
    plt.close(fig)
    rendered = imc24_handshake.imc24_fig01_handshake_timeline(tables["handshake_runs"], tables["runs"], tables["packets"], tables["frames"])
    drawn = [t for t in rendered.note.split() if t.startswith("aioquic_aioquic/")]
    assert len(drawn) == 2 and set(drawn) <= set(rendered.runs["run_id"].to_list())
    assert set(rendered.runs["client_impl"].to_list()) == {"aioquic"} and set(rendered.runs["mode"].to_list()) == {"iack", "wfc"}
    plt.close(rendered.artefact)


def test_fig03_draws_every_client_and_mode(tables):
    rendered = imc24_handshake.imc24_fig03_coalescence(tables["runs"], tables["packets"], tables["frames"])
    fig = rendered.artefact
    assert len(fig.axes) == 2 and set(rendered.runs["scenario"].to_list()) == {"noloss"}
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {"aioquic", "quic-go", "IACK", "WFC", "ACK CRYPTO"} <= texts
    plt.close(fig)


def test_tab02_cells_match_the_paper_where_measured(tables):
    table = imc24_tables.imc24_tab02_guidelines(tables["handshake_runs"], tables["runs"], tables["datagrams"]).artefact
    assert table.height == 8
    below = guidelines.BELOW
    server_lost = one(table, certificate=below, condition=guidelines.SERVER_FLIGHT_LOST)
    assert (server_lost["paper"], server_lost["agrees"]) == ("WFC", "yes") and server_lost["ours"].startswith("WFC by")
    assert server_lost["median_iack_advantage_ms"] < -30.0
    # At 9 ms RTT the server's default PTO (no RTT sample after an instant ACK) costs IACK ~170 ms.
    nine = guidelines.guidelines(tables["handshake_runs"]).filter((pl.col("scenario") == "drop_server_flight") & (pl.col("rtt_ms") == 9.0))
    assert nine.height == 2 and (nine["iack_advantage_ms"] < -100.0).all()
    client_lost = one(table, certificate=below, condition=guidelines.CLIENT_FLIGHT_LOST)
    assert (client_lost["paper"], client_lost["agrees"]) == ("IACK", "yes")
    # Above the limit the loss cells come from the *_large scenarios (aioquic's one-datagram ClientHello; quic-go
    # needs the 10,226 B certificate): losing the server flight after an instant ACK still waits for the server's
    # PTO (WFC, unlike the paper), losing the client's Finished flight favours IACK.
    server_lost_above = one(table, certificate=guidelines.ABOVE, condition=guidelines.SERVER_FLIGHT_LOST)
    assert server_lost_above["configurations"] == 2 and server_lost_above["ours"].startswith("WFC by") and server_lost_above["agrees"] == "no"
    client_lost_above = one(table, certificate=guidelines.ABOVE, condition=guidelines.CLIENT_FLIGHT_LOST)
    assert client_lost_above["configurations"] == 2 and client_lost_above["agrees"] == "yes"
    # The 5,113 B certificate exceeds 3 × aioquic's one-datagram first flight, not quic-go's two.
    classified = guidelines.classify_configurations(tables["runs"], tables["datagrams"])
    assert one(classified, client_impl="aioquic", scenario="amplification", rtt_ms=9.0)["certificate"] == guidelines.ABOVE
    assert one(classified, client_impl="quic-go", scenario="amplification", rtt_ms=9.0)["certificate"] == below
    # Δt = 200 ms is above 3·RTT at 9 ms RTT, below it at 100 ms.
    assert one(classified, client_impl="aioquic", scenario="amplification", rtt_ms=9.0)["condition"] == guidelines.LONG_DELAY
    assert one(classified, client_impl="aioquic", scenario="amplification", rtt_ms=100.0)["condition"] == guidelines.SHORT_DELAY


def test_tab03_one_row_per_server_and_mode_with_the_paper_beside(tables):
    table = imc24_tables.imc24_tab03_server_ack_delay(tables["runs"], tables["frames"]).artefact
    aioquic = table.filter(pl.col("server") == "aioquic")
    assert aioquic["mode"].sort().to_list() == ["IACK", "WFC"] and table["server"].n_unique() == table.filter(pl.col("mode") == "IACK").height
    iack, wfc = one(table, server="aioquic", mode="IACK"), one(table, server="aioquic", mode="WFC")
    assert iack["paper_initial"] == "3.3 / 3.4 / 3.3" and iack["paper_handshake"] == "- / - / -"
    # Our aioquic server ACKs the ClientHello after a short positive delay, longer when the ACK
    # waits for the ServerHello (WFC); the first Handshake ACK exists, delay reported per rep.
    for rep in (1, 2, 3):
        assert 0.0 < float(iack[f"initial_{rep}"]) < float(wfc[f"initial_{rep}"]) < 10.0
    # A server without an ACK in a space prints '-', a repetition without a run 'no run'.
    frames = tables["frames"].filter(pl.col("pn_space") != "handshake")
    stripped = one(imc24_tables.imc24_tab03_server_ack_delay(tables["runs"], frames, repetitions=4).artefact, server="aioquic", mode="IACK")
    assert stripped["handshake_1"] == "-" and stripped["initial_4"] == "no run"


def test_tab04_paper_beside_ours_and_lower_bounds(tables):
    handshakes = tables["handshake_runs"]
    table = imc24_tables.imc24_tab04_client_defaults(handshakes).artefact
    aioquic = one(table, client="aioquic")
    assert (aioquic["paper_default_pto_ms"], aioquic["paper_second_flight"]) == ("200", "2,3,4")
    assert abs(float(aioquic["default_pto_ms"]) - 200.0) < 5.0 and aioquic["second_flight"].startswith("2,3,4")
    # quic-go's ClientHello takes two datagrams: its second flight starts at datagram 3.
    assert one(table, client="quic-go")["second_flight"].replace("IACK ", "").startswith("3")
    # Without any probe before the server's answer only a lower bound exists: "> N".
    answered_first = handshakes.with_columns(pl.lit(None, dtype=pl.Float64).alias("default_pto_ms"))
    bounded = one(imc24_tables.imc24_tab04_client_defaults(answered_first).artefact, client="aioquic")
    assert bounded["default_pto_ms"].startswith("> ") and "lower bound" in bounded["default_pto_from"]


def test_tab04_lists_only_the_clients_of_the_iack_wfc_runs(tables, tmp_path):
    """Linux TCP's downloads (the ACK-ratio study) have handshake_runs rows too, without a mode: no client row."""
    parquet = tmp_path / "parquet"
    stages.ingest_group_stage(RAW, "linux-tcp_linux-tcp", "sample", parquet)
    stages.derive_group_stage(parquet, "linux-tcp_linux-tcp", recovery.RecoveryParams())
    tcp = parquet_store.read_table(parquet, "handshake_runs")
    assert set(tcp["client_impl"]) == {"linux-tcp"}
    both = pl.concat([tables["handshake_runs"], tcp], how="diagonal_relaxed")
    rendered = imc24_tables.imc24_tab04_client_defaults(both)
    assert rendered.artefact["client"].to_list() == ["aioquic", "quic-go"]
    assert "linux-tcp" not in rendered.runs["client_impl"].to_list()
