"""Batches of the compiled qlog lane, on real recorded qlogs (tests/data/loopback: quic-go and ngtcp2, 1 MB transfers):

- a batch whose rows all come from the lane leaves it with every column the batch assembly derives (run id, vantage,
  time_ms, source, direction, decrypted, time_abs_ns; ACK ranges as lists of structs) computed there, and equals
  the pure-Python reader's batch (which derives them in polars, `batch.Merged.finish`);
- the plausibility checks observe the same whatever the batch size, also for a connection whose first sent packet
  and first received packet fall into different batches (clients: they send first; a server's first received
  packet, logged before its first sent one at the same millisecond, counts as received after it when both are in
  one batch and not when they are not: a batch dependence older than this test, see the bench README);
- the compiled reader's plausibility summaries (quicack_core's plausibility_*, one pass per table) observe what the
  polars group_bys observe, batch after batch, and leave a batch with a NaN time to polars.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest

import quicack.qlog.batch as batch_module
import quicack.schema.contract as contract_module
from quicack.qlog import iter_qlog
from quicack.qlog.plausibility import PlausibilityChecks
from quicack.qlog.reader_engine import lane_class

LOOPBACK = Path(__file__).parent / "data" / "loopback"
REAL = sorted(LOOPBACK.glob("*/transfer_1MB/1/*/qlog/*.sqlog"))
REAL = [p for p in REAL if p.parts[-6] in ("quic-go_quic-go", "ngtcp2_ngtcp2")]
TABLES = ("packets", "frames", "metrics_logged", "endpoints", "ingest_issues")

try:
    HAS_LANE = lane_class("compiled") is not None
except ImportError:
    HAS_LANE = False


def _tables(path: Path, engine: str, batch_events: int = 50_000) -> dict[str, pl.DataFrame]:
    batches = list(iter_qlog(path, "r", batch_events=batch_events, engine=engine))
    return {name: pl.concat([getattr(batch, name) for batch in batches]) for name in TABLES}


def test_the_real_qlogs_are_there() -> None:
    assert len(REAL) == 4, REAL  # client and server of quic-go and ngtcp2


@pytest.mark.skipif(not HAS_LANE, reason="quicack_core with QlogLane is not built (install.sh)")
@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parts[-6]}-{p.parts[-3]}")
def test_lane_batches_carry_the_derived_columns_without_the_polars_assembly(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = _tables(path, "python")
    finished: list[str] = []
    original = batch_module.Merged.finish

    def finish(self: batch_module.Merged, df: pl.DataFrame, table: object) -> pl.DataFrame:
        finished.append(getattr(table, "name", "?"))
        return original(self, df, table)

    monkeypatch.setattr(batch_module.Merged, "finish", finish)
    compiled = _tables(path, "compiled")
    # each table of each batch: the lane's rows and the connections' first events (absorbed into the lane)
    assert finished == [], f"batches assembled in polars: {finished}"
    for name in TABLES:
        assert python[name].equals(compiled[name]), f"{name} differs"
    packets, frames = compiled["packets"], compiled["frames"]
    assert packets.height > 500 and frames["ack_ranges"].drop_nulls().len() > 50
    assert set(packets["direction"]) == {"c2s", "s2c"} and set(packets["source"]) == {"qlog"}
    # quic-go logs a reference time (absolute ns per packet), ngtcp2 does not (null)
    with_reference = "quic-go" in path.parts[-6]
    assert packets["time_abs_ns"].null_count() == (0 if with_reference else packets.height)
    assert frames["ack_ranges"].dtype == pl.List(pl.Struct({"low": pl.Int64, "high": pl.Int64}))


@pytest.mark.skipif(not HAS_LANE, reason="quicack_core with QlogLane is not built (install.sh)")
@pytest.mark.parametrize("path", REAL[:2], ids=lambda p: f"{p.parts[-6]}-{p.parts[-3]}")
def test_lane_batches_come_conformed_to_the_contract(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane hands each table of a batch in the contract's columns and order (nulls where no qlog says), so
    that neither the reader nor the writer re-selects it in polars (`Table.conform` returns it as it is)."""
    reselected: list[str] = []
    original = contract_module.Table.conform

    def conform(self: contract_module.Table, frame: pl.DataFrame) -> pl.DataFrame:
        if frame.schema != self.polars_schema:
            reselected.append(self.name)
        return original(self, frame)

    monkeypatch.setattr(contract_module.Table, "conform", conform)
    compiled = _tables(path, "compiled", batch_events=300)
    assert compiled["packets"].height > 500 and compiled["frames"].height > 500
    assert [name for name in reselected if name in ("packets", "frames", "metrics_logged")] == []


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_plausibility_observations_do_not_depend_on_the_batch_size(engine: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    if engine == "compiled" and not HAS_LANE:
        pytest.skip("quicack_core with QlogLane is not built (install.sh)")
    checks: list[PlausibilityChecks] = []
    later: list[int] = []  # batches with received packets of a connection whose first sent was in an earlier one
    original, original_later = PlausibilityChecks.add_batch, PlausibilityChecks._add_received_after_earlier

    def add_batch(self: PlausibilityChecks, *tables: pl.DataFrame) -> None:
        if not checks or checks[-1] is not self:
            checks.append(self)
        original(self, *tables)

    def received_after_earlier(self: PlausibilityChecks, packets: pl.DataFrame) -> None:
        later.append(packets.height)
        original_later(self, packets)

    monkeypatch.setattr(PlausibilityChecks, "add_batch", add_batch)
    monkeypatch.setattr(PlausibilityChecks, "_add_received_after_earlier", received_after_earlier)

    def observed(path: Path, batch_events: int) -> dict[str, dict[str, object]]:
        checks.clear()
        for _ in iter_qlog(path, "r", batch_events=batch_events, engine=engine):
            pass
        (seen,) = checks
        return {run: dataclasses.asdict(o) for run, o in seen.observed.items()}

    for path in [p for p in REAL if p.parts[-3] == "client"]:
        whole = observed(path, 50_000)
        (run,) = whole.values()
        # a transfer: packets sent and received, RTT metrics after the first packet received, ACK delays both ways
        assert run["first_sent_ms"] is not None and run["first_received_ms"] is not None
        assert run["max_sample_ms"] is not None and set(run["max_ack_delay_ms"]) == {"sent", "received"}
        # batches of 10 events (still enough for the first Initial to fix the time origin)
        assert observed(path, 10) == whole, path
    assert later, "no first received packet in a later batch than the first sent one"


def _observations(checks: PlausibilityChecks) -> tuple[dict[str, dict[str, object]], dict[str, int]]:
    runs = {run: dataclasses.asdict(o) for run, o in checks.observed.items()}
    return runs, dict(sorted(checks.unknown_frames.items()))


@pytest.mark.parametrize("batch_events", [50_000, 10])
def test_compiled_plausibility_summaries_observe_what_polars_does(batch_events: int) -> None:
    core = pytest.importorskip("quicack_core")
    if not hasattr(core, "plausibility_packets"):
        pytest.skip("quicack_core without the plausibility summaries")
    for path in REAL:
        compiled, polars = PlausibilityChecks(compiled=core), PlausibilityChecks()
        for batch in iter_qlog(path, "r", batch_events=batch_events, engine="compiled"):
            tables = (batch.packets, batch.frames, batch.metrics_logged)
            compiled.add_batch(*tables)
            polars.add_batch(*tables)
            assert _observations(compiled) == _observations(polars), path
        runs, _ = _observations(compiled)
        assert all(run["first_ms"] is not None for run in runs.values())


def test_compiled_plausibility_summaries_handmade_unknown_frames_and_a_nan_time() -> None:
    """Hand-made rows (a real qlog has no NaN time): frames of unknown types counted by name, nulls under the
    fill text; a NaN time sends the batch to polars."""
    core = pytest.importorskip("quicack_core")
    if not hasattr(core, "plausibility_packets"):
        pytest.skip("quicack_core without the plausibility summaries")
    (path,) = [p for p in REAL if p.parts[-6] == "quic-go_quic-go" and p.parts[-3] == "client"]
    (batch,) = list(iter_qlog(path, "r", engine="compiled"))
    unknown = batch.frames.head(3).with_columns(
        frame_type=pl.lit("unknown"), raw_frame_type=pl.Series(["0x42", None, "0x42"], dtype=pl.Utf8))
    frames = pl.concat([batch.frames, unknown])
    nan = batch.packets.with_columns(time_ms=pl.when(pl.int_range(pl.len()) == 5).then(float("nan"))
                                     .otherwise(pl.col("time_ms")))
    for packets in (batch.packets, nan):
        compiled, polars = PlausibilityChecks(compiled=core), PlausibilityChecks()
        for checks in (compiled, polars):
            checks.add_batch(packets, frames, batch.metrics_logged)
        assert repr(_observations(compiled)) == repr(_observations(polars))  # NaN as NaN
        assert compiled.unknown_frames == {"0x42": 2, "(no name or number logged)": 1}
    assert core.plausibility_packets(nan, 1.0) is None
