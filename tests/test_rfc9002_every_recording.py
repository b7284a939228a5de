"""RFC 9002 agreement on every recording: each endpoint of every qlog recorded here (the embedded dataset and the
qlogs under tests/data) either agrees with the recomputation within its logging resolution, or its deviations are
reproduced by the cause recorded for its implementation and vantage (src/quicack/metrics/rfc9002_deviations.csv)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from quicack.layout import run_groups
from quicack.metrics.agreement import (
    DELTA_COLUMNS,
    NOT_COMPARABLE,
    RESOLUTION_FACTOR,
    SUB_MS_RESOLUTION,
    WHOLE_MS_RESOLUTION,
    WITHIN_RESOLUTION,
    deviation_explanations,
    estimator_agreement,
    rfc9002_agreement,
)
from quicack.metrics.rtt import recompute_rtt_samples
from quicack.qlog import read_qlog
from tests.conftest import REPO, SAMPLE_RAW

KEY = ["run_id", "vantage"]
# Hand-made (synthetic) qlogs are no recording; every other qlog file under tests/data is one.
TEST_DATA_QLOGS = sorted(
    path
    for path in (REPO / "tests" / "data").rglob("*")
    if path.is_file() and "qlog" in path.name and "synthetic" not in path.parts
)


def tables_of_test_data_qlogs() -> dict[str, pl.DataFrame]:
    parts: dict[str, list[pl.DataFrame]] = {"packets": [], "frames": [], "metrics_logged": [], "endpoints": []}
    for index, path in enumerate(TEST_DATA_QLOGS):
        result = read_qlog(path, f"{index}:{path.relative_to(REPO)}", None)
        for name in parts:
            parts[name].append(getattr(result, name))
    return {name: pl.concat(frames, how="vertical_relaxed") for name, frames in parts.items()}


@pytest.fixture(scope="module")
def recordings(sample_tables) -> dict[str, dict[str, pl.DataFrame]]:
    groups = [group for group in run_groups(SAMPLE_RAW) if not group.startswith("linux-tcp")]
    embedded = sample_tables(
        groups, ["packets", "frames", "metrics_logged", "endpoints", "rtt_samples", "estimator_agreement"]
    )
    test_data = tables_of_test_data_qlogs()
    test_data["rtt_samples"] = recompute_rtt_samples(test_data["packets"], test_data["frames"], test_data["endpoints"])
    test_data["estimator_agreement"] = estimator_agreement(
        test_data["rtt_samples"], test_data["metrics_logged"], test_data["endpoints"]
    )
    return {"embedded": embedded, "tests/data": test_data}


def resolution_of(rows: pl.DataFrame) -> float:
    logged = rows["smoothed_rtt_logged_ms"].drop_nulls()
    return WHOLE_MS_RESOLUTION if (logged % 1 == 0).all() else SUB_MS_RESOLUTION


def within(deltas: dict[str, float], tolerance: dict[str, float]) -> bool:
    return all(abs(deltas[q]) <= tolerance[q] + 1e-9 for q in deltas)


def max_deltas(rows: pl.DataFrame, columns: dict[str, str] = DELTA_COLUMNS) -> dict[str, float]:
    return {q: rows[c].abs().max() or 0.0 for q, c in columns.items()}


# The causes a replay of the recomputed samples reproduces (``replayed_deviations``).
REPLAYED_CAUSES = {
    "samples_not_taken", "rttvar_from_min_rtt", "handshake_ack_delay_ignored", "qlog_ack_delay_unscaled",
    "event_time_offset", "whole_ms_clock",
    "ack_only_largest_not_sampled",
}  # fmt: skip


# Causes under which the implementation's latest_rtt differs from the one the qlog's event times give: the replay
# takes the logged one (a 1 ms difference can flip §5.3's "latest_rtt >= min_rtt + ack_delay" test).
OWN_LATEST_RTT_CAUSES = {"event_time_offset", "whole_ms_clock"}


def replayed_deviations(rows: pl.DataFrame, samples: pl.DataFrame, causes: set[str], only_logged: bool) -> pl.DataFrame:
    """The logged state beside RFC 9002 §5.3 replayed as the recorded causes say the implementation computes it:
    from its own first sample on and, with ``only_logged``, from the samples it logged a change for alone
    (samples_not_taken); with the latest_rtt it logged where it logged one (event_time_offset: its own send and
    receive times); rttvar from min_rtt (rttvar_from_min_rtt); no ACK delay in the Handshake space
    (handshake_ack_delay_ignored); 8 x the logged ACK delay (qlog_ack_delay_unscaled)."""
    joined = (
        samples.select("sample_index", "pn_space", "latest_rtt_ms", "ack_delay_ms")
        .join(
            rows.select("sample_index", "smoothed_rtt_logged_ms", "rttvar_logged_ms", "latest_rtt_logged_ms"),
            on="sample_index",
            how="left",
        )
        .sort("sample_index")
    )
    if only_logged:
        joined = joined.filter(pl.col("smoothed_rtt_logged_ms").is_not_null())
    if "ack_only_largest_not_sampled" in causes:
        # No sample from an ACK whose largest acknowledged packet carried no ack-eliciting frame.
        eliciting = samples.select("sample_index", "largest_ack_eliciting")
        joined = joined.join(eliciting, on="sample_index", how="left").filter(
            pl.col("largest_ack_eliciting").fill_null(True)
        )
    start = 0
    if "samples_not_taken" in causes:
        # The implementation's first sample: the first logged state with rtt_variance = smoothed_rtt / 2.
        first = joined.filter(
            (pl.col("rttvar_logged_ms") - pl.col("smoothed_rtt_logged_ms") / 2).abs()
            <= 0.01 * pl.col("smoothed_rtt_logged_ms")
        )
        start = first["sample_index"].min() if first.height else 0
    smoothed = rttvar = min_rtt = None
    out = []
    for row in joined.filter(pl.col("sample_index") >= start).iter_rows(named=True):
        latest = row["latest_rtt_ms"]
        if causes & OWN_LATEST_RTT_CAUSES and row["latest_rtt_logged_ms"] is not None:
            latest = row["latest_rtt_logged_ms"]
        delay = row["ack_delay_ms"]
        if "handshake_ack_delay_ignored" in causes and row["pn_space"] == "handshake":
            delay = 0.0
        if "qlog_ack_delay_unscaled" in causes:
            delay *= 8  # the delay the implementation used: the logged field times 2^ack_delay_exponent (default 3)
        if smoothed is None:
            smoothed, rttvar, min_rtt = latest, latest / 2, latest
        else:
            min_rtt = min(min_rtt, latest)
            adjusted = latest - delay if latest >= min_rtt + delay else latest
            reference = min_rtt if "rttvar_from_min_rtt" in causes else smoothed
            rttvar = 0.75 * rttvar + 0.25 * abs(reference - adjusted)
            smoothed = 0.875 * smoothed + 0.125 * adjusted
        out.append({**row, "smoothed_replayed": smoothed, "rttvar_replayed": rttvar})
    replayed = pl.DataFrame(out, infer_schema_length=None).filter(pl.col("smoothed_rtt_logged_ms").is_not_null())
    return replayed.select(
        (pl.col("smoothed_rtt_logged_ms") - pl.col("smoothed_replayed")).alias("smoothed_rtt"),
        (pl.col("rttvar_logged_ms") - pl.col("rttvar_replayed")).alias("rttvar"),
        (
            pl.col("smoothed_rtt_logged_ms")
            + 4 * pl.col("rttvar_logged_ms")
            - pl.col("smoothed_replayed")
            - 4 * pl.col("rttvar_replayed")
        ).alias("pto"),
    )


def explained(rows: pl.DataFrame, samples: pl.DataFrame, causes: set[str], tables: dict, resolution: float) -> bool:
    """Whether the recorded ``causes`` reproduce the endpoint's deviations within the resolution."""
    tolerance = {q: factor * resolution for q, factor in RESOLUTION_FACTOR.items()}
    if causes & OWN_LATEST_RTT_CAUSES:
        # The implementation's latest_rtt differs from the events' by this much: smoothed_rtt by up to it, rttvar by
        # up to twice (|smoothed - sample| moves with both), the PTO by up to 9 times.
        offset = (rows["latest_rtt_logged_ms"] - rows["latest_rtt_ms"]).abs().max() or 0.0
        tolerance = {q: t + {"smoothed_rtt": 1, "rttvar": 2, "pto": 9}[q] * offset for q, t in tolerance.items()}
    if causes & REPLAYED_CAUSES:
        for only_logged in (False, True) if "samples_not_taken" in causes else (False,):
            replayed = replayed_deviations(rows, samples, causes, only_logged)
            if replayed.height and within(max_deltas(replayed, {q: q for q in DELTA_COLUMNS}), tolerance):
                return True
    if "ack_delay_not_capped" in causes:
        # neqo: the ACK delay not capped at max_ack_delay (as before the handshake is confirmed).
        run_id, vantage = rows["run_id"][0], rows["vantage"][0]
        one = {name: tables[name].filter((pl.col("run_id") == run_id) & (pl.col("vantage") == vantage))
               for name in ("packets", "frames", "metrics_logged", "endpoints")}  # fmt: skip
        unconfirmed = one["endpoints"].with_columns(pl.lit(None, pl.Float64).alias("handshake_confirmed_ms"))
        variant = estimator_agreement(
            recompute_rtt_samples(one["packets"], one["frames"], unconfirmed), one["metrics_logged"], unconfirmed
        )
        if within(max_deltas(variant), tolerance):
            return True
    return within(max_deltas(rows), tolerance)


def with_largest_ack_eliciting(samples: pl.DataFrame, packets: pl.DataFrame, run_id: str, vantage: str) -> pl.DataFrame:
    """``samples`` with whether the largest acknowledged packet of each was ack-eliciting (the endpoint's qlog)."""
    sent = (
        packets.filter((pl.col("run_id") == run_id) & (pl.col("vantage") == vantage) & (pl.col("event") == "sent"))
        .select(
            "pn_space",
            pl.col("packet_number").alias("largest_acked"),
            pl.col("ack_eliciting").alias("largest_ack_eliciting"),
        )
        .unique(["pn_space", "largest_acked"], keep="first")
    )
    return samples.join(sent, on=["pn_space", "largest_acked"], how="left")


def endpoint_verdicts(tables: dict) -> list[dict]:
    agreement = tables["estimator_agreement"].filter(pl.col("smoothed_rtt_logged_ms").is_not_null())
    causes = deviation_explanations().group_by("implementation", "vantage").agg(pl.col("cause"))
    recorded = {(r["implementation"], r["vantage"]): set(r["cause"]) for r in causes.iter_rows(named=True)}
    samples_by_endpoint = tables["rtt_samples"].partition_by(KEY, as_dict=True)
    verdicts = []
    for (run_id, vantage), rows in agreement.partition_by(KEY, as_dict=True).items():
        implementation = rows["implementation"][0]
        resolution = resolution_of(rows)
        bound = {q: f * resolution for q, f in RESOLUTION_FACTOR.items()}
        deltas = max_deltas(rows)
        verdict = {"run_id": run_id, "vantage": vantage, "implementation": implementation, **deltas}
        if within(deltas, bound):
            verdict["verdict"] = "within resolution"
        else:
            causes_here = recorded.get((implementation, vantage), set())
            samples = samples_by_endpoint[(run_id, vantage)]
            if "ack_only_largest_not_sampled" in causes_here:
                samples = with_largest_ack_eliciting(samples, tables["packets"], run_id, vantage)
            verdict["verdict"] = (
                "explained" if explained(rows, samples, causes_here, tables, resolution) else "unexplained"
            )
        verdicts.append(verdict)
    return verdicts


@pytest.mark.parametrize("source", ["embedded", "tests/data"])
def test_every_endpoint_agrees_within_resolution_or_by_its_recorded_cause(recordings, source):
    verdicts = endpoint_verdicts(recordings[source])
    assert len(verdicts) >= (500 if source == "embedded" else 20), "the loop compared (almost) nothing"
    implementations = {(v["implementation"], v["vantage"]) for v in verdicts}
    assert len(implementations) >= (5 if source == "embedded" else 3)
    unexplained = [v for v in verdicts if v["verdict"] == "unexplained"]
    assert not unexplained, (
        f"{len(unexplained)} endpoints deviate beyond the resolution without a reproduced cause: {unexplained[:5]}"
    )


def test_ngtcp2_takes_no_sample_when_the_largest_acknowledged_packet_is_ack_only(recordings):
    """The two 10 MB ngtcp2 downloads drift up to 5.5 ms from RFC 9002 unless the samples whose largest acknowledged
    packet is an ACK-only one are left out: ngtcp2 takes none from them (RFC 9002 §5.1 does)."""
    tables = recordings["embedded"]
    run_id, vantage = "quic-go_ngtcp2/transfer-wfc-rtt100ms-10MB-h3/3", "client"
    rows = tables["estimator_agreement"].filter(
        (pl.col("run_id") == run_id) & (pl.col("vantage") == vantage) & pl.col("smoothed_rtt_logged_ms").is_not_null()
    )
    samples = with_largest_ack_eliciting(
        tables["rtt_samples"].filter((pl.col("run_id") == run_id) & (pl.col("vantage") == vantage)),
        tables["packets"],
        run_id,
        vantage,
    )
    assert samples.filter(~pl.col("largest_ack_eliciting")).height >= 5
    bound = {q: f * WHOLE_MS_RESOLUTION for q, f in RESOLUTION_FACTOR.items()}
    every_sample = max_deltas(replayed_deviations(rows, samples, {"whole_ms_clock"}, False), {q: q for q in bound})
    as_ngtcp2 = replayed_deviations(rows, samples, {"whole_ms_clock", "ack_only_largest_not_sampled"}, False)
    assert not within(every_sample, bound)
    assert within(max_deltas(as_ngtcp2, {q: q for q in bound}), bound)


def test_rfc9002_agreement_table_explains_every_row_of_the_embedded_dataset(recordings):
    embedded = recordings["embedded"]
    table = rfc9002_agreement(embedded["estimator_agreement"], embedded["endpoints"])
    qlog_endpoints = (
        embedded["endpoints"].filter(pl.col("source") == "qlog").select("implementation", "vantage").unique()
    )
    assert table.height == qlog_endpoints.height  # every recorded implementation and vantage has its row
    assert table.height >= 5
    assert table["explanation"].null_count() == 0
    assert not table["explanation"].str.starts_with("no cause recorded").any()
    assert not table["explanation"].str.starts_with("no RTT sample recomputed").any()
    assert (table.filter(pl.col("within_resolution"))["explanation"] == WITHIN_RESOLUTION).all()
    quinn_client = table.filter((pl.col("implementation") == "quinn") & (pl.col("vantage") == "client")).row(
        0, named=True
    )
    # quinn logs no frames: over its 94 client qlogs of the embedded dataset not one RTT sample can be recomputed
    assert quinn_client["endpoints"] >= 90 and quinn_client["samples"] == 0
    assert quinn_client["explanation"].startswith("not_comparable")
    quic_go_client = table.filter((pl.col("implementation") == "quic-go") & (pl.col("vantage") == "client")).row(
        0, named=True
    )
    assert quic_go_client["smoothed_rtt_abs_dev_max_ms"] > 50  # the 89 ms of the issue: shown, not hidden
    assert "samples_not_taken" in quic_go_client["explanation"]


def test_logged_default_before_the_first_sample_is_not_paired_ngtcp2_loopback():
    """ngtcp2 logs its initial state (smoothed_rtt 333, rtt_variance 166, latest_rtt 0) when it sends its first Initial,
    at 0 ms, and its first sample at 1 ms (whole-ms clock): the default lay within the pairing window and made a 332 ms
    'deviation' of sample 0."""
    path = next(
        (REPO / "tests" / "data" / "loopback" / "ngtcp2_ngtcp2" / "transfer_10KB" / "1" / "client" / "qlog").iterdir()
    )
    result = read_qlog(path, "run", None)
    samples = recompute_rtt_samples(result.packets, result.frames, result.endpoints)
    first = (
        estimator_agreement(samples, result.metrics_logged, result.endpoints)
        .filter(pl.col("sample_index") == 0)
        .row(0, named=True)
    )
    assert first["smoothed_rtt_logged_ms"] == 1.0
    assert abs(first["smoothed_delta_ms"]) <= 1.0


def test_every_test_data_recording_is_read():
    assert len(TEST_DATA_QLOGS) >= 40
    assert all(Path(p).stat().st_size > 0 for p in TEST_DATA_QLOGS)


def test_build_db_stores_the_agreement_table_commented(recordings, tmp_path):
    import duckdb

    from quicack.schema import RFC9002_AGREEMENT
    from quicack.stages.database_stage import write_rfc9002_agreement

    parquet = tmp_path / "estimator_agreement.parquet"
    recordings["embedded"]["estimator_agreement"].write_parquet(parquet)
    endpoints = tmp_path / "endpoints.parquet"
    recordings["embedded"]["endpoints"].write_parquet(endpoints)
    db = tmp_path / "agreement.duckdb"
    rows = write_rfc9002_agreement(db, {"estimator_agreement": [parquet], "endpoints": [endpoints]})
    with duckdb.connect(str(db)) as con:
        comment = con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'rfc9002_agreement'").fetchone()[
            0
        ]
        commented = con.execute(
            "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'rfc9002_agreement' AND comment IS NOT NULL"
        ).fetchone()[0]
        neqo = con.execute(
            "SELECT pto_abs_dev_max_ms, explanation FROM rfc9002_agreement WHERE implementation = 'neqo' AND vantage = "
            "'client'"
        ).fetchone()
    assert rows >= 5 and comment.startswith("One row per implementation and vantage")
    assert commented == len(RFC9002_AGREEMENT.columns)
    assert 25 < neqo[0] < 35 and "ack_delay_not_capped" in neqo[1]  # the 29 ms of the issue, with its cause


def test_every_recorded_cause_belongs_to_a_recorded_endpoint(recordings):
    """No stale rows in rfc9002_deviations.csv: each names an implementation and vantage recorded here, and a known
    cause (one the replay or the tolerance reproduces)."""
    compared = {
        (v["implementation"], v["vantage"]) for source in recordings.values() for v in endpoint_verdicts(source)
    }
    causes = deviation_explanations()
    assert causes.height >= 10
    deviations = causes.filter(pl.col("cause") != NOT_COMPARABLE)
    assert set(deviations.select("implementation", "vantage").iter_rows()) <= compared
    assert set(deviations["cause"]) <= REPLAYED_CAUSES | {"ack_delay_not_capped"}
    # "not comparable" only where no endpoint of that implementation and vantage yields a sample, as the data shows
    embedded = recordings["embedded"]
    for implementation, vantage in (
        causes.filter(pl.col("cause") == NOT_COMPARABLE).select("implementation", "vantage").iter_rows()
    ):
        ends = (
            embedded["endpoints"]
            .filter(
                (pl.col("source") == "qlog")
                & (pl.col("implementation") == implementation)
                & (pl.col("vantage") == vantage)
            )
            .select(KEY)
        )
        assert ends.height > 0 and (implementation, vantage) not in compared
        packets = embedded["packets"].filter(pl.col("source") == "qlog").join(ends, on=KEY)
        assert packets.is_empty() or not packets["frames_logged"].any()
    assert causes.filter(
        (pl.col("explanation").str.len_chars() < 40) | (pl.col("evidence").str.len_chars() < 20)
    ).is_empty()


def test_quiche_logs_the_ack_delay_field_unscaled(recordings):
    """The same ACK frames in both qlogs of quic-go_quiche runs: the quic-go server logs the delay it sent, the quiche
    client 1/8 of it (the encoded field, not times 2^ack_delay_exponent): the cause recorded for quiche."""
    frames = recordings["embedded"]["frames"].filter(
        (pl.col("source") == "qlog")
        & (pl.col("frame_type") == "ack")
        & pl.col("run_id").str.starts_with("quic-go_quiche/")
    )
    match = ["run_id", "pn_space", "packet_number", "largest_acked"]
    sent = frames.filter((pl.col("vantage") == "server") & (pl.col("event") == "sent")).select(*match, "ack_delay_ms")
    received = frames.filter((pl.col("vantage") == "client") & (pl.col("event") == "received"))
    pairs = sent.join(received.select(*match, pl.col("ack_delay_ms").alias("quiche_ms")), on=match).filter(
        pl.col("quiche_ms") > 0.01
    )
    ratio = pairs["ack_delay_ms"] / pairs["quiche_ms"]
    assert pairs.height >= 20
    assert 8.0 <= ratio.min() and ratio.max() < 9.0  # 8 = 2^3, plus the 3 low bits the encoding drops
    assert "qlog_ack_delay_unscaled" in set(
        deviation_explanations().filter(pl.col("implementation") == "quiche")["cause"]
    )


def test_the_report_table_sets_every_implementation_beside_appendix_e(recordings) -> None:
    """imc24-rfc9002-agreement (the report's table of rfc9002_agreement): one row per implementation and vantage of
    the embedded dataset, each explained, and imc24 App. E's finding beside the implementations the paper had —
    aioquic's RTT-variance formula, which the recomputation finds again as its recorded cause."""
    from quicack.figures.imc24_pto import imc24_rfc9002_agreement_table
    from quicack.metrics.agreement import rfc9002_agreement

    embedded = recordings["embedded"]
    agreement = rfc9002_agreement(embedded["estimator_agreement"], embedded["endpoints"])
    table = imc24_rfc9002_agreement_table(agreement).artefact
    assert table.height == agreement.height >= 5
    assert (
        table["explanation"].str.len_chars().min() > 0
        and not table["explanation"].str.contains("no cause recorded").any()
    )
    aioquic = table.filter((pl.col("implementation") == "aioquic") & (pl.col("vantage") == "client")).row(0, named=True)
    assert "different formula to calculate RTT variance" in aioquic["imc24_appendix_e"]
    assert "rttvar_from_min_rtt" in aioquic["explanation"]
    quinn = table.filter(pl.col("implementation") == "quinn")
    assert quinn.height > 0 and (quinn["imc24_appendix_e"] == "not among the paper's clients").all()
