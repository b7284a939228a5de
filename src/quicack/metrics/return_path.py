"""The packets of a download as the wire carried them, QUIC and TCP alike: the measured rethink and tcpquic
artefacts (return-path packet sizes, volumes, packets per second) read them from here.

A *wire packet* is one IP packet of a run at one capture point: a UDP datagram (``datagrams``) or a TCP segment
(``tcp_segments``), with its IP size, its direction and whether it lies after the first round trip. Each run is read
at one capture point: the client side of the emulated link (``sim_left``) where it was captured, because the paper's
return path is what the receiver sent; else the first other one (``vantage`` says which). TCP runs with both capture
points are read as the links carried them (``tcp_link_segments``): their return path at the server side, after the
router's ACK thinning, which stands for the ACK filter of a PEP.

Forward *data* packets: a TCP segment with payload; for QUIC every server datagram after the first round trip. The
embedded data cuts the server's datagrams to a snap length (its README), so their frames cannot be read; after the
handshake a download's server sends almost nothing but STREAM data (it does not acknowledge the client's
ACK-only packets), so the count is the data packets within a few per run.
"""

from __future__ import annotations

import polars as pl

from quicack.metrics.ack_breakdown import first_rtt_end
from quicack.metrics.scalars import integer

CLIENT_SIDE = "sim_left"
SERVER_SIDE = "sim_right"
WIRE_COLUMNS = ["run_id", "vantage", "protocol", "direction", "time_ms", "ip_bytes", "carries_data", "after_first_rtt"]


def one_vantage_per_run(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows of each run's chosen capture point: the client side where present, else the first other."""
    chosen = (
        rows.group_by("run_id")
        .agg(pl.col("vantage").unique().alias("vantages"))
        .with_columns(
            pl.when(pl.col("vantages").list.contains(CLIENT_SIDE))
            .then(pl.lit(CLIENT_SIDE))
            .otherwise(pl.col("vantages").list.sort().list.first())
            .alias("vantage")
        )
        .select("run_id", "vantage")
    )
    return rows.join(chosen, on=["run_id", "vantage"], how="semi")


def _with_first_rtt(rows: pl.DataFrame) -> pl.DataFrame:
    # The same boundary as ack_breakdown's: the first c2s packet after the first s2c packet (for TCP the ACK of the
    # SYN/ACK), so the handshake's packets (QUIC's padded Initials, TCP's SYN) stay out of the return-path sizes.
    return rows.join(first_rtt_end(rows), on=["run_id", "vantage"], how="left").with_columns(
        after_first_rtt=(pl.col("time_ms") >= pl.col("first_rtt_end_ms")).fill_null(False)
    )


def quic_wire_packets(datagrams: pl.DataFrame) -> pl.DataFrame:
    """One row per UDP datagram of each run's chosen capture point."""
    rows = one_vantage_per_run(datagrams).select(
        "run_id",
        "vantage",
        pl.lit("quic").alias("protocol"),
        "direction",
        "time_ms",
        (pl.col("ip_header_bytes") + pl.col("udp_header_bytes") + pl.col("udp_payload_bytes")).alias("ip_bytes"),
    )
    rows = _with_first_rtt(rows)
    return rows.with_columns(carries_data=(pl.col("direction") == "s2c") & pl.col("after_first_rtt")).select(
        WIRE_COLUMNS
    )


def tcp_link_segments(tcp_segments: pl.DataFrame) -> pl.DataFrame:
    """The TCP segments of each run as its two links carried them: the forward (s2c) segments at the client side,
    what the receiver got; the return (c2s) segments at the server side, after the router, whose ACK thinning
    (RFC 3449, the emulated PEP) drops most of the kernel's ACKs there. Every row is on the client side's clock and
    keeps ``vantage`` = sim_left. Runs without both sides: their one chosen capture point."""
    two_sided = tcp_segments.join(
        tcp_segments.filter(pl.col("vantage") == CLIENT_SIDE).select("run_id").unique(), on="run_id", how="semi"
    ).join(tcp_segments.filter(pl.col("vantage") == SERVER_SIDE).select("run_id").unique(), on="run_id", how="semi")
    origin = (
        two_sided.filter(pl.col("vantage") == CLIENT_SIDE)
        .group_by("run_id")
        .agg((pl.col("time_abs_ns") - (pl.col("time_ms") * 1e6).round().cast(pl.Int64)).min().alias("origin_ns"))
    )
    forward = two_sided.filter((pl.col("vantage") == CLIENT_SIDE) & (pl.col("direction") == "s2c"))
    returned = two_sided.filter((pl.col("vantage") == SERVER_SIDE) & (pl.col("direction") == "c2s"))
    links = (
        pl.concat([forward, returned], how="vertical")
        .join(origin, on="run_id")
        .with_columns(
            ((pl.col("time_abs_ns") - pl.col("origin_ns")) / 1e6).alias("time_ms"), pl.lit(CLIENT_SIDE).alias("vantage")
        )
        .drop("origin_ns")
    )
    one_sided = one_vantage_per_run(tcp_segments.join(two_sided.select("run_id").unique(), on="run_id", how="anti"))
    return pl.concat([links, one_sided], how="vertical").sort("run_id", "time_ms")


def return_link_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """The client-to-server rows (ack_breakdown, datagrams, ...) of each run where the return link is read: TCP runs
    (``protocol`` 'tcp') at the server side where captured, after the router's ACK thinning, as
    ``tcp_link_segments`` reads them; every other run at ``one_vantage_per_run``'s capture point."""
    c2s = rows.filter(pl.col("direction") == "c2s")
    tcp_after_router = c2s.filter((pl.col("protocol") == "tcp") & (pl.col("vantage") == SERVER_SIDE))
    rest = c2s.join(tcp_after_router.select("run_id").unique(), on="run_id", how="anti")
    return pl.concat([tcp_after_router, one_vantage_per_run(rest)], how="vertical")


def tcp_wire_packets(tcp_segments: pl.DataFrame) -> pl.DataFrame:
    """One row per TCP segment of each run as its links carried it (``tcp_link_segments``)."""
    return link_wire_packets(tcp_link_segments(tcp_segments))


def link_wire_packets(links: pl.DataFrame) -> pl.DataFrame:
    """Wire packets of TCP segments already chosen per link (``tcp_link_segments``' rows)."""
    rows = links.select(
        "run_id",
        "vantage",
        pl.lit("tcp").alias("protocol"),
        "direction",
        "time_ms",
        pl.col("ip_bytes"),
        (pl.col("payload_bytes") > 0).alias("carries_data"),
    )
    return _with_first_rtt(rows).select(WIRE_COLUMNS)


def wire_packets(datagrams: pl.DataFrame, tcp_segments: pl.DataFrame | None = None) -> pl.DataFrame:
    """QUIC datagrams and (where the dataset has them) TCP segments as one table of wire packets."""
    parts = [quic_wire_packets(datagrams)]
    if tcp_segments is not None and not tcp_segments.is_empty():
        parts.append(tcp_wire_packets(tcp_segments))
    return pl.concat(parts, how="vertical_relaxed").sort("run_id", "time_ms")


def return_packet_sizes(wire: pl.DataFrame) -> pl.DataFrame:
    """IP sizes of the return-path (client → server) packets after the first round trip (rethink Fig. 1), counted:
    per run and size, ``packets`` of that size — a distribution that does not grow with the packets behind it."""
    return (
        wire.filter((pl.col("direction") == "c2s") & pl.col("after_first_rtt"))
        .group_by("run_id", "protocol", "ip_bytes")
        .agg(pl.len().cast(pl.Int64).alias("packets"))
        .sort("run_id", "ip_bytes")
    )


def counted_median(counts: pl.DataFrame, value: str, count: str = "packets") -> float | None:
    """The median of ``value`` with each row standing for ``count`` of them: what ``median()`` of the values written
    out once per count gives (the mean of the two middle ones for an even total); None without any."""
    ordered = counts.group_by(value).agg(pl.col(count).sum()).sort(value)
    total = int(ordered[count].sum())
    if total == 0:
        return None
    ends = ordered[count].cum_sum()

    def at(position: int) -> float:  # the value at a 0-based position of the written-out, sorted values
        return float(ordered[value][integer((ends > position).arg_max())])

    return (at((total - 1) // 2) + at(total // 2)) / 2


def return_volume(wire: pl.DataFrame) -> pl.DataFrame:
    """Per run: forward (s2c) and return (c2s) IP bytes, the return as % of the forward, return packets and forward
    data packets (rethink Table III, tcpquic's volume)."""
    forward = pl.col("direction") == "s2c"
    return wire.group_by("run_id", "vantage", "protocol").agg(
        pl.col("ip_bytes").filter(forward).sum().alias("forward_ip_bytes"),
        pl.col("ip_bytes").filter(~forward).sum().alias("return_ip_bytes"),
        pl.col("ip_bytes").filter(~forward & pl.col("after_first_rtt")).sum().alias("return_ip_bytes_after_first_rtt"),
        (~forward).sum().alias("return_packets"),
        pl.col("carries_data").sum().alias("forward_data_packets"),
    ).with_columns(
        (100.0 * pl.col("return_ip_bytes") / pl.col("forward_ip_bytes")).alias("return_percent_of_forward")
    ).sort("run_id")


def packets_per_second(wire: pl.DataFrame, direction: str, data_only: bool = False) -> pl.DataFrame:
    """Packets of one direction per 1 s bin from each run's first packet (rethink Figs. 3 and 5): run_id, second,
    packets; a second without packets inside the run counts 0 (a stalled return path is part of the picture)."""
    start = wire.group_by("run_id").agg(pl.col("time_ms").min().alias("start_ms"))
    chosen = wire.filter(pl.col("direction") == direction)
    if data_only:
        chosen = chosen.filter(pl.col("carries_data"))
    binned = (
        chosen.join(start, on="run_id")
        .with_columns(((pl.col("time_ms") - pl.col("start_ms")) // 1000).cast(pl.Int64).alias("second"))
        .group_by("run_id", "second")
        .agg(pl.len().cast(pl.Int64).alias("packets"))
    )
    seconds = (
        binned.group_by("run_id").agg(pl.int_ranges(0, pl.col("second").max() + 1).alias("second")).explode("second")
    )
    return (
        seconds.join(binned, on=["run_id", "second"], how="left")
        .with_columns(pl.col("packets").fill_null(0))
        .sort("run_id", "second")
    )
