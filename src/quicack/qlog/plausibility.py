"""Plausibility checks of a qlog's connections, as data: what a log says that cannot be true.

A log may contradict itself: quicX writes RTTs in microseconds under ``time_units: ms`` (a smoothed RTT of 5,000
"ms" inside an 11 ms trace), pcap2qlog writes the raw ACK Delay field. The reader never rescales a value on a guess;
each check that fails gives one ``ingest_issues`` row per connection with the numbers (severity warning; ``strict``
makes any issue fatal) and its name in ``endpoints.plausibility_flags``, so SQL can leave such traces out::

    SELECT * FROM rtt_samples JOIN endpoints USING (run_id, vantage) WHERE len(plausibility_flags) = 0

The checks read the rows the reader made (both engines make the same), batch by batch, so a file is never held whole:

- ``rtt_sample_longer_than_trace``: a logged RTT sample (latest_rtt) longer than the whole trace (RTT metrics count
  from the first packet the endpoint received after sending one: before, they are the initial RTT);
- ``rtt_longer_than_trace``: a logged min_rtt, or a smoothed_rtt logged with a sample (latest_rtt or min_rtt above
  0), longer than the trace (a smoothed_rtt logged before any sample is the initial RTT of RFC 9002, 333 ms);
- ``ack_delay_above_100x_max_ack_delay``: an ACK Delay above 100 times the max_ack_delay of the endpoint that sent it
  (its transport parameter as logged, else the default 25 ms);
- ``time_backwards``: event times of the packets an endpoint sent, or of its metrics updates, going backwards by
  more than ``BACKWARDS_TOLERANCE_MS`` (a clock or unit error: these are logged as they happen).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

BACKWARDS_TOLERANCE_MS = 1.0
ACK_DELAY_FACTOR = 100
DEFAULT_MAX_ACK_DELAY_MS = 25.0  # RFC 9000 §18.2

RTT_SAMPLE_LONGER = "rtt_sample_longer_than_trace"
RTT_LONGER = "rtt_longer_than_trace"
ACK_DELAY_ABOVE = "ack_delay_above_100x_max_ack_delay"
TIME_BACKWARDS = "time_backwards"
CHECKS = (RTT_SAMPLE_LONGER, RTT_LONGER, ACK_DELAY_ABOVE, TIME_BACKWARDS)
EVENTS = ("sent", "received")  # the rows' event (the direction of a packet as its endpoint saw it)


@dataclass
class Observed:
    """What one connection's rows showed so far."""

    first_ms: float | None = None
    last_ms: float | None = None
    max_sample_ms: float | None = None  # latest_rtt
    max_rtt_ms: float | None = None  # min_rtt, or smoothed_rtt logged with a sample
    rtt_name: str = ""
    first_sent_ms: float | None = None
    first_received_ms: float | None = None  # RTT metrics count from the first packet received after one was sent
    max_ack_delay_ms: dict[str, float] = field(default_factory=dict)  # by event: 'sent' (own ACKs), 'received'
    last_sent_ms: float | None = None
    last_metric_ms: float | None = None
    backwards_steps: int = 0
    largest_backwards_ms: float = 0.0

    def span_ms(self) -> float | None:
        return None if self.first_ms is None or self.last_ms is None else self.last_ms - self.first_ms

    def add_span(self, first: float | None, last: float | None) -> None:
        """A batch's earliest and latest row of this connection (None: its rows have no time)."""
        if first is not None:
            self.first_ms = first if self.first_ms is None else min(self.first_ms, first)
            self.last_ms = last if self.last_ms is None else max(self.last_ms, last)  # type: ignore[type-var]

    def add_backwards(self, last_field: str, first: float | None, last: float | None, count: int,
                      worst: float | None) -> None:
        """A batch's backward steps of a series logged in event order (`_backwards`), continuing the previous
        batch's (whose last time is ``last_field``)."""
        before = getattr(self, last_field)
        if before is not None and first is not None and first - before < -BACKWARDS_TOLERANCE_MS:
            count += 1
            worst = first - before if worst is None else min(worst, first - before)
        if count:
            self.backwards_steps += count
            self.largest_backwards_ms = max(self.largest_backwards_ms, -(worst or 0.0))
        if last is not None:
            setattr(self, last_field, last)


def _backwards(times: pl.Expr) -> list[pl.Expr]:
    """Per group: the first and last of ``times`` (in row order), how many steps go back by more than the
    tolerance, and the largest step back (the most negative), for `Observed.add_backwards`."""
    step = times.diff()
    return [times.first().alias("first"), times.last().alias("last"),
            (step < -BACKWARDS_TOLERANCE_MS).sum().alias("count"), step.min().alias("worst")]


def _larger(current: float | None, value: float | None) -> float | None:
    if value is None:
        return current
    return value if current is None or value > current else current


@dataclass
class PlausibilityChecks:
    """Per-connection observations of one file's rows (by run_id), fed batch by batch."""

    observed: dict[str, Observed] = field(default_factory=dict)
    unknown_frames: Counter[str] = field(default_factory=Counter)
    # quicack_core when the compiled reader feeds the checks: its plausibility_* functions summarize a batch in one
    # pass per table; None: polars (the Python reader's, which tests/test_qlog_engines.py compares with them)
    compiled: Any = None

    def _get(self, run_id: str) -> Observed:
        seen = self.observed.get(run_id)
        if seen is None:
            seen = self.observed[run_id] = Observed()
        return seen

    def add_batch(self, packets: pl.DataFrame, frames: pl.DataFrame, metrics: pl.DataFrame) -> None:
        if self.compiled is not None and self._add_compiled(packets, frames, metrics):
            return
        # One group_by per table gathers everything the checks read from it (each polars call costs about as much
        # as a pass over a batch: a dozen of them took an eighth of the compiled reader's time).
        t = pl.col("time_ms")
        spans = [t.min().alias("a"), t.max().alias("b")]
        if packets.height:
            sent = pl.col("event") == "sent"
            sent_times = t.filter(sent)
            # an RTT sample needs a packet sent and then one received from the peer (its ACK): the first received
            # at or after the batch's first sent (connections with a first sent in an earlier batch: below)
            received_after = t.filter((pl.col("event") == "received") & (t >= sent_times.min())).min()
            rows = packets.group_by("run_id").agg(*spans, sent_times.min().alias("first_sent"),
                                                  received_after.alias("after"), *_backwards(sent_times))
            self._add_packets(rows.iter_rows(), packets)
        if frames.height:
            ack = (pl.col("frame_type") == "ack") & pl.col("ack_delay_ms").is_not_null()
            delays = [pl.col("ack_delay_ms").filter(ack & (pl.col("event") == event)).max().alias(event)
                      for event in EVENTS]
            self._add_frames(frames.group_by("run_id").agg(*spans, *delays).iter_rows())
            unknown = frames.filter(pl.col("frame_type") == "unknown")
            if unknown.height:
                self._add_unknown(unknown["raw_frame_type"].value_counts().iter_rows())
        if metrics.height:
            self._add_metrics(metrics, spans)

    def _add_compiled(self, packets: pl.DataFrame, frames: pl.DataFrame, metrics: pl.DataFrame) -> bool:
        """`add_batch` with the summaries computed by quicack_core in one pass per table (as the group_bys above
        compute them); False, with nothing changed, when a value needs polars (NaN or infinite times)."""
        core = self.compiled
        packet_rows = core.plausibility_packets(packets, BACKWARDS_TOLERANCE_MS) if packets.height else []
        frame_rows = core.plausibility_frames(frames) if frames.height else ([], [])
        if packet_rows is None or frame_rows is None:
            return False
        self._add_packets(packet_rows, packets)
        self._add_frames(frame_rows[0])
        self._add_unknown(frame_rows[1])
        if metrics.height:
            metric_rows = core.plausibility_metrics(metrics, self.observed, BACKWARDS_TOLERANCE_MS)
            if metric_rows is None:
                t = pl.col("time_ms")
                self._add_metrics(metrics, [t.min().alias("a"), t.max().alias("b")])
            else:
                self._add_metric_rows(metric_rows)
        return True

    def _add_packets(self, rows: Iterable[tuple[Any, ...]], packets: pl.DataFrame) -> None:
        """Per run: (run_id, first, last, first sent, first received at or after it, *backwards of the sent)."""
        earlier: list[str] = []
        for run_id, first, last, first_sent, after, *backwards in rows:
            seen = self._get(run_id)
            seen.add_span(first, last)
            if seen.first_received_ms is None and seen.first_sent_ms is not None:
                earlier.append(run_id)
            elif first_sent is not None and seen.first_sent_ms is None:
                seen.first_sent_ms = first_sent
                if seen.first_received_ms is None and after is not None:
                    seen.first_received_ms = after
            seen.add_backwards("last_sent_ms", *backwards)
        if earlier:
            self._add_received_after_earlier(packets.filter(pl.col("run_id").is_in(earlier)))

    def _add_frames(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Per run: (run_id, first, last, largest ACK delay of sent ACK frames, of received ones)."""
        for run_id, first, last, *by_event in rows:
            seen = self._get(run_id)
            seen.add_span(first, last)
            for event, delay in zip(EVENTS, by_event, strict=True):
                if delay is not None:
                    seen.max_ack_delay_ms[event] = max(delay, seen.max_ack_delay_ms.get(event, delay))

    def _add_unknown(self, counts: Iterable[tuple[str | None, int]]) -> None:
        """(raw_frame_type, count) of the frames of type 'unknown'."""
        for name, count in counts:
            self.unknown_frames["(no name or number logged)" if name is None else name] += count

    def _add_received_after_earlier(self, packets: pl.DataFrame) -> None:
        """The first packet received at or after a first sent of an earlier batch."""
        for run_id, times in packets.filter(pl.col("event") == "received").group_by("run_id").agg(
                pl.col("time_ms")).iter_rows():
            seen = self._get(run_id)
            after = [t for t in times if t is not None and t >= seen.first_sent_ms]
            if after:
                seen.first_received_ms = min(after)

    def _add_metrics(self, metrics: pl.DataFrame, spans: list[pl.Expr]) -> None:
        # an update carrying a sample: ngtcp2 logs the initial smoothed_rtt (333 ms) with latest_rtt 0 before any
        with_sample = (pl.col("latest_rtt_ms").fill_null(0) > 0) | (pl.col("min_rtt_ms").fill_null(0) > 0)
        # an RTT sample needs a packet from the peer after one of ours: before, RTT metrics are the initial RTT of
        # RFC 9002 (quinn logs min_rtt = latest_rtt = 0.333 s at the start, a quinn server after the client's Initial)
        runs = metrics["run_id"].unique().to_list()  # those of this batch (all those seen: a file's, every batch)
        gates = pl.DataFrame(
            {"run_id": runs, "gate": [self._get(run).first_received_ms for run in runs]},
            schema={"run_id": pl.Utf8, "gate": pl.Float64},
        )
        after = pl.col("time_ms") >= pl.col("gate")
        summary = metrics.join(gates, on="run_id", how="left", maintain_order="left").group_by("run_id").agg(
            *spans,
            pl.col("latest_rtt_ms").filter(after).max().alias("sample"),
            pl.col("min_rtt_ms").filter(after).max().alias("min"),
            pl.col("smoothed_rtt_ms").filter(after & with_sample).max().alias("smoothed"),
            *_backwards(pl.col("time_ms")),
        )
        self._add_metric_rows(summary.iter_rows())

    def _add_metric_rows(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Per run: (run_id, first, last, largest latest_rtt, min_rtt, smoothed_rtt with a sample, after the gate,
        *backwards of the times)."""
        for run_id, first, last, sample, min_rtt, smoothed, *backwards in rows:
            seen = self._get(run_id)
            seen.add_span(first, last)
            seen.max_sample_ms = _larger(seen.max_sample_ms, sample)
            for name, value in (("min_rtt", min_rtt), ("smoothed_rtt", smoothed)):
                if value is not None and (seen.max_rtt_ms is None or value > seen.max_rtt_ms):
                    seen.max_rtt_ms, seen.rtt_name = value, name
            seen.add_backwards("last_metric_ms", *backwards)

    def failed(self, run_id: str, local_max_ack_delay_ms: float | None,
               peer_max_ack_delay_ms: float | None) -> list[tuple[str, str]]:
        """(check, message with the numbers) of each check the connection fails."""
        seen = self.observed.get(run_id)
        if seen is None:
            return []
        out = []
        span = seen.span_ms()
        if span is not None and seen.max_sample_ms is not None and seen.max_sample_ms > span:
            out.append(
                (
                    RTT_SAMPLE_LONGER,
                    f"RTT samples larger than the trace: latest_rtt up to {seen.max_sample_ms:g} "
                    f"ms in a trace whose rows span {span:g} ms (a unit other than the log "
                    "says?); not rescaled",
                )
            )
        if span is not None and seen.max_rtt_ms is not None and seen.max_rtt_ms > span:
            out.append((RTT_LONGER, f"RTT metrics longer than the trace: {seen.rtt_name} up to {seen.max_rtt_ms:g} ms "
                                    f"in a trace whose rows span {span:g} ms (a unit other than the log says?); "
                                    "not rescaled"))
        for event, own, max_ack_delay in (("sent", "its own", local_max_ack_delay_ms),
                                          ("received", "the peer's", peer_max_ack_delay_ms)):
            delay = seen.max_ack_delay_ms.get(event)
            limit = (DEFAULT_MAX_ACK_DELAY_MS if max_ack_delay is None else max_ack_delay) * ACK_DELAY_FACTOR
            if delay is not None and delay > limit:
                source = "logged" if max_ack_delay is not None else "default, none logged"
                out.append((ACK_DELAY_ABOVE, f"ACK delays of {event} ACK frames up to {delay:g} ms, above "
                                             f"{ACK_DELAY_FACTOR} x {own} max_ack_delay ({limit / ACK_DELAY_FACTOR:g} "
                                             f"ms, {source}); not rescaled"))
        if seen.backwards_steps:
            out.append((TIME_BACKWARDS, f"event times go backwards {seen.backwards_steps} times by more than "
                                        f"{BACKWARDS_TOLERANCE_MS:g} ms (up to {seen.largest_backwards_ms:g} ms) in "
                                        "the sent packets or metrics updates, which are logged as they happen"))
        return out

    def unknown_frames_message(self) -> str | None:
        """The file's one issue about frames the reader does not know, or None."""
        if not self.unknown_frames:
            return None
        total = sum(self.unknown_frames.values())
        ordered = sorted(self.unknown_frames.items(), key=lambda item: (-item[1], item[0]))
        names = ", ".join(f"{name} ({count})" for name, count in ordered[:8])
        more = f", and {len(self.unknown_frames) - 8} more names" if len(self.unknown_frames) > 8 else ""
        return (f"{total} frame{'s' if total != 1 else ''} of types the reader does not know, kept as frame_type "
                f"'unknown' with the logged name or number in raw_frame_type: {names}{more}")
