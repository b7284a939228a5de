"""Our values of the ACK-ratio papers' claims (ackfreq22, rethink, tcpquic), one function per claim id of
``data/reference/<paper>_claims.csv``: sizes from the specifications (``quicack.models.ack_overhead``) and, where
the dataset has the runs, the ACK policies measured from the receivers' qlogs (``quicack.metrics.ack_policy``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import polars as pl

from quicack.claims import ClaimFunction, Measured, ackfreq22_cells, claims_rendered, claims_table, rethink_cells
from quicack.claims.ackfreq22_measured_claims import ACKFREQ22_MEASURED
from quicack.claims.browser_claims import ACKFREQ22_BROWSERS, RETHINK_BROWSERS
from quicack.claims.table_cells import CellClaims, with_cells
from quicack.metrics.ack_policy import ack_policy_of_runs
from quicack.metrics.rethink_volume import claims_volume_table, reduced_wire
from quicack.metrics.return_path import (
    CLIENT_SIDE,
    counted_median,
    packets_per_second,
    return_packet_sizes,
    return_volume,
)
from quicack.metrics.scalars import number
from quicack.metrics.selection import (
    RETHINK_PROFILE,
    RETHINK_RETURN100K_PROFILE,
    MissingData,
    default_ack_policy_runs,
    rethink_runs,
)
from quicack.models import ack_overhead as model
from quicack.provenance import DatasetDescription
from quicack.reference import paper_claims
from quicack.rendered import Rendered
from quicack.storage.run_batches import RunRows, in_memory, per_run_batches

# Per table name: a polars frame, or a packet-sized view read a batch of runs at a time (quicack.storage.run_batches).
Tables = Mapping[str, RunRows]


def formula(value: float, unit: str) -> ClaimFunction:
    """A claim our formulas decide, whatever the dataset."""
    return lambda tables: Measured(value, value, f"{value:g} {unit} (formula)", 0)


def _policies(tables: Tables) -> pl.DataFrame:
    """Per ok default-policy transfer run: its client and its measured ACK policy."""
    selected = (
        default_ack_policy_runs(in_memory(tables["runs"]))
        .filter(pl.col("status") == "ok")
        .select("run_id", "client_impl")
    )
    return selected.join(ack_policy_of_runs(selected, tables["packets"], tables["frames"]), on="run_id")


def client_ack_ratio(tables: Tables, client: str) -> Measured:
    """Median over the client's runs of its median measured ACK ratio."""
    runs = _policies(tables).filter(pl.col("client_impl") == client).drop_nulls("ack_ratio_median")
    if runs.is_empty():
        return Measured.unmeasured(f"no {client} transfer of at least 1 MB with its default ACK policy")
    value = number(runs["ack_ratio_median"].median())
    spread = f"p10–p90 {number(runs['ack_ratio_p10'].min()):.0f}–{number(runs['ack_ratio_p90'].max()):.0f}"
    return Measured(value, value, f"{value:g} ({spread}, measured)", runs.height)


def quic_to_tcp_ack_ratio(tables: Tables) -> Measured:
    """From the specifications: smallest QUIC / smallest TCP ACK, and largest loss-free QUIC / TCP ACK."""
    low = model.quic_ack().size / model.tcp_ack().size
    high = model.quic_ack_largest_without_loss().size / model.tcp_ack(timestamps=True).size
    return Measured(low, high, f"{low:.2f}–{high:.2f} (formula: 51/40 B, 78/52 B)", 0)


def anatomy_share(tables: Tables, case: str) -> Measured:
    shares = model.anatomy_cells().filter(pl.col("case") == case).sort("bound", descending=True)["share_percent"]
    low, high = shares.to_list()
    return Measured(low, high, f"{low:.2f}–{high:.2f} % (formula)", 0)


def _rethink_wire(
    tables: Tables,
    profile: str,
    protocol: str,
    ack_ratio: int,
    reduce: Callable[[pl.DataFrame], pl.DataFrame],
    client: str | None = None,
) -> tuple[pl.DataFrame, int]:
    """``reduce`` (per run) over the wire packets of the ok rethink runs of one path profile, protocol, receiver AR
    (and client), and how many runs; (empty, 0) without any of their packets."""
    ok = rethink_runs(in_memory(tables["runs"]), (profile,), (ack_ratio,)).filter(
        (pl.col("status") == "ok") & (pl.col("protocol") == protocol)
    )
    if client is not None:
        ok = ok.filter(pl.col("client_impl") == client)
    if "datagrams" not in tables or ok.is_empty():
        return pl.DataFrame(), 0
    try:
        reduced = reduced_wire(
            ok, tables["datagrams"], tables.get("tcp_segments"), reduce, _setup(profile, protocol, ack_ratio)
        )
    except MissingData:
        return pl.DataFrame(), 0
    return reduced, ok.height


def _rethink_clients(tables: Tables, profile: str, protocol: str, ack_ratio: int) -> list[str]:
    """The receivers (client implementations) with ok rethink runs of that profile, protocol and AR."""
    ok = rethink_runs(in_memory(tables["runs"]), (profile,), (ack_ratio,)).filter(
        (pl.col("status") == "ok") & (pl.col("protocol") == protocol)
    )
    return sorted(ok["client_impl"].unique().to_list())


def _setup(profile: str, protocol: str, ack_ratio: int) -> str:
    return f"{protocol.upper()} AR 1:{ack_ratio} over {profile}"


def _per_client(values: dict[str, tuple[float, int]], unit: str, setup: str, fmt: str = "{:.0f}") -> Measured:
    """A range over receivers, each named with its value (the papers give one number per stack)."""
    if not values:
        return Measured.unmeasured(f"no {setup} run")
    numbers = [v for v, _ in values.values()]
    text = ", ".join(f"{client} {fmt.format(v)}" for client, (v, _) in sorted(values.items(), key=lambda kv: kv[1][0]))
    low, high = min(numbers), max(numbers)
    span = fmt.format(low) if low == high else f"{fmt.format(low)}–{fmt.format(high)}"
    return Measured(low, high, f"{span} {unit} ({text}; {setup}, measured)", sum(n for _, n in values.values()))


def return_size_median(tables: Tables, protocol: str) -> Measured:
    """rethink Fig. 1: median return-path IP packet size after the first RTT, 10 MB, no loss, AR 1:2 — per receiver."""
    values = {}
    for client in _rethink_clients(tables, RETHINK_PROFILE, protocol, 2):
        sizes, runs = _rethink_wire(tables, RETHINK_PROFILE, protocol, 2, return_packet_sizes, client)
        median = counted_median(sizes, "ip_bytes")
        if runs and median is not None:  # None: its runs sent no return packet after the first RTT
            values[client] = (median, runs)
    return _per_client(values, "B", _setup(RETHINK_PROFILE, protocol, 2))


def quic_over_tcp_ack_size(tables: Tables) -> Measured:
    """tcpquic's conclusion ('each ACK is at least 1.5x-2x larger' without loss), measured: each QUIC receiver's median
    return-path packet size after the first RTT over Linux TCP's (rethink Fig. 1's runs: 10 MB, no loss, AR 1:2)."""
    tcp_sizes, tcp_runs = _rethink_wire(tables, RETHINK_PROFILE, "tcp", 2, return_packet_sizes)
    if not tcp_runs:
        return Measured.unmeasured(f"no {_setup(RETHINK_PROFILE, 'tcp', 2)} run")
    tcp = counted_median(tcp_sizes, "ip_bytes")
    if tcp is None:
        return Measured.unmeasured(f"no return packet after the first RTT in a {_setup(RETHINK_PROFILE, 'tcp', 2)} run")
    values = {}
    for client in _rethink_clients(tables, RETHINK_PROFILE, "quic", 2):
        sizes, runs = _rethink_wire(tables, RETHINK_PROFILE, "quic", 2, return_packet_sizes, client)
        median = counted_median(sizes, "ip_bytes")
        if runs and median is not None:
            values[client] = (median / tcp, runs + tcp_runs)
    return _per_client(values, f"× Linux TCP's {tcp:.0f} B", _setup(RETHINK_PROFILE, "quic", 2), "{:.2f}")


def ack_bytes_reduction(tables: Tables) -> Measured:
    """rethink §V: return-path IP bytes at AR 1:2 over those at AR 1:10 (QUIC, 10 MB, no loss; medians over runs),
    per receiver with runs at both ratios."""
    values = {}
    both = set(_rethink_clients(tables, RETHINK_PROFILE, "quic", 2)) & set(
        _rethink_clients(tables, RETHINK_PROFILE, "quic", 10)
    )
    for client in sorted(both):
        medians, runs = {}, 0
        for ratio in (2, 10):
            volumes, n = _rethink_wire(tables, RETHINK_PROFILE, "quic", ratio, return_volume, client)
            medians[ratio] = number(volumes["return_ip_bytes"].median()) if n else float("nan")
            runs += n
        values[client] = (medians[2] / medians[10], runs)
    return _per_client(values, "×", "QUIC AR 1:2 over AR 1:10 return bytes, rethink-satellite", "{:.1f}")


# Fig. 5's rates: the quinn pair (NewReno, paced, as the paper's Chromium paced), the only stack of the 100 kbit/s runs,
# so both sides compare one stack.
FIG5_RECEIVER = "quinn"


def forward_packet_rate(tables: Tables, profile: str, ack_ratio: int) -> Measured:
    """rethink Fig. 5: median over runs of the forward data packets per second in the transfer's busiest 1 s bin
    after slow start — the median of each run's upper half of bins (the rate it settles at); the quinn pair."""
    rates, runs = _rethink_wire(
        tables, profile, "quic", ack_ratio, lambda wire: packets_per_second(wire, "s2c", data_only=True), FIG5_RECEIVER
    )
    if runs == 0:
        return Measured.unmeasured(f"no {_setup(profile, 'quic', ack_ratio)} 10 MB run of the {FIG5_RECEIVER} receiver")
    settled = (
        rates.filter(pl.col("packets") >= pl.col("packets").median().over("run_id"))
        .group_by("run_id")
        .agg(pl.col("packets").median())
    )
    value = number(settled["packets"].median())
    return Measured(
        value, value, f"{value:.0f} packets/s ({_setup(profile, 'quic', ack_ratio)}, {FIG5_RECEIVER}, measured)", runs
    )


def quick_acks_per_run(segments: pl.DataFrame) -> pl.DataFrame:
    """Per TCP run (``run_id``, ``quick_acks``), at the receiver's capture point (the client side, where its ACKs
    leave and the data arrives): its pure ACKs that newly acknowledge one data segment each, from its first ACK of
    data up to the first that newly acknowledges more than one segment (the first delayed ACK), or all of them if
    none does. Read from the ACK numbers, not from times: the return link delays the ACKs by half an RTT, so counting
    ACKs against data arrivals across capture points finds stretches that the receiver never sent."""
    receiver = segments.filter(pl.col("vantage") == CLIENT_SIDE)
    segment_bytes = (
        receiver.filter(pl.col("direction") == "s2c")
        .group_by("run_id", "connection")
        .agg(pl.col("payload_bytes").max().alias("segment_bytes"))
    )
    acks = (
        receiver.filter((pl.col("direction") == "c2s") & pl.col("pure_ack"))
        .sort("run_id", "connection", "time_ms")
        .with_columns((pl.col("ack") - pl.col("ack").shift(1)).over("run_id", "connection").alias("newly_acked"))
        # the handshake's ACK (no data yet) and duplicate ACKs acknowledge nothing new
        .filter(pl.col("newly_acked") > 0)
        .join(segment_bytes, on=["run_id", "connection"])
        .with_columns(pl.int_range(pl.len()).over("run_id", "connection").alias("acks_before"))
    )
    per_connection = acks.group_by("run_id", "connection").agg(
        pl.col("acks_before")
        .filter(pl.col("newly_acked") > pl.col("segment_bytes"))
        .min()
        .fill_null(pl.len())
        .alias("quick_acks")
    )
    # a run downloads over one connection; should a run hold more, its longest quick-ACK phase is the download's
    return per_connection.group_by("run_id").agg(pl.col("quick_acks").max())


def tcp_quick_acks(tables: Tables) -> Measured:
    """rethink §III-A: Linux acknowledges at least the first 8 data packets one by one (TCP QUICKACK, AR 1:1): the
    ACKs before the first one that covers two data segments, from the TCP runs (no loss, AR 1:2)."""
    ok = rethink_runs(in_memory(tables["runs"]), (RETHINK_PROFILE,), (2,)).filter(
        (pl.col("status") == "ok") & (pl.col("protocol") == "tcp")
    )
    segments = tables.get("tcp_segments")
    if ok.is_empty() or segments is None:
        return Measured.unmeasured("no Linux TCP run over rethink-satellite (tcp_segments)")
    per_run = per_run_batches(quick_acks_per_run, ok["run_id"], segments)
    if per_run.is_empty():
        return Measured.unmeasured("no receiver-side capture of a Linux TCP run over rethink-satellite (tcp_segments)")
    value = number(per_run["quick_acks"].median())
    text = f"{value:.0f} quick ACKs (one data segment each, at the receiver; median over runs)"
    return Measured(value, value, text, per_run.height)


def anatomy_measured(tables: Tables, protocol: str) -> Measured:
    """tcpquic anatomy from the wire: median return IP bytes as % of the forward IP bytes, no loss, AR 1:2, per
    receiver."""
    values = {}
    for client in _rethink_clients(tables, RETHINK_PROFILE, protocol, 2):
        volumes, runs = _rethink_wire(tables, RETHINK_PROFILE, protocol, 2, return_volume, client)
        if runs:
            values[client] = (number(volumes["return_percent_of_forward"].median()), runs)
    return _per_client(values, "%", _setup(RETHINK_PROFILE, protocol, 2), "{:.2f}")


def table3_volume(tables: Tables, protocol: str, ack_ratio: int, lossy: bool) -> Measured:
    """rethink Table III: return KB per 10 MB forward (medians over runs; shorter loss runs scaled, and said so),
    per receiver."""
    try:
        table = claims_volume_table(tables)
    except MissingData as missing:
        return Measured.unmeasured(str(missing))
    rows = table.filter(
        (pl.col("protocol") == protocol) & (pl.col("receiver_ack_ratio") == ack_ratio) & (pl.col("lossy") == lossy)
    )
    sizes = ", ".join(sorted(set(rows["scaled_from"].to_list()))) if lossy else "10 MB"
    setup = f"{protocol.upper()} AR 1:{ack_ratio}, {'1 % loss' if lossy else 'no loss'}, {sizes}"
    values = {
        configuration.split(" AR ")[0]: (kb, runs)
        for configuration, kb, runs in rows.select("configuration", "return_kb_per_10mb", "runs").iter_rows()
    }
    return _per_client(values, "KB", setup)


ACKFREQ22: dict[str, ClaimFunction] = {
    "ackfreq22-5.2-min-quic-ack": formula(model.quic_ack().size, "B"),
    "ackfreq22-5.2-min-quic-ack-ipv6": formula(model.quic_ack(model.IPV6_HEADER).size, "B"),
    "ackfreq22-5.2-tcp-loss-min": formula(model.tcp_ack(sack_blocks=1).size, "B"),
    "ackfreq22-5.2-tcp-loss-max": formula(model.largest_tcp_ack().size, "B"),
    **{
        f"ackfreq22-tab02-{client}-ar": partial(client_ack_ratio, client=client)
        for client in ("aioquic", "quic-go", "ngtcp2")
    },
    **ACKFREQ22_MEASURED,
    **ACKFREQ22_BROWSERS,
    **ackfreq22_cells.FINDINGS,
}
RETHINK: dict[str, ClaimFunction] = {
    "rethink-V-simple-quic-ack": formula(model.quic_ack().size, "B"),
    "rethink-V-quic-vs-tcp-ack": quic_to_tcp_ack_ratio,
    "rethink-V-quic-range-growth": formula(model.quic_ack(extra_ranges=1).size, "B"),
    "rethink-V-fig1-median-tcp": partial(return_size_median, protocol="tcp"),
    "rethink-V-fig1-median-quic": partial(return_size_median, protocol="quic"),
    "rethink-VI-ar10-fewer-ack-bytes": ack_bytes_reduction,
    "rethink-VI-fig5-ar2-unconstrained": partial(forward_packet_rate, profile=RETHINK_PROFILE, ack_ratio=2),
    "rethink-VI-fig5-ar2-return100k": partial(forward_packet_rate, profile=RETHINK_RETURN100K_PROFILE, ack_ratio=2),
    "rethink-VI-fig5-ar10-return100k": partial(forward_packet_rate, profile=RETHINK_RETURN100K_PROFILE, ack_ratio=10),
    "rethink-VI-tcp-quickacks": tcp_quick_acks,
    **{
        f"rethink-tab3-{protocol}-ar{ratio}-{'loss' if lossy else 'noloss'}": partial(
            table3_volume, protocol=protocol, ack_ratio=ratio, lossy=lossy
        )
        for protocol in ("quic", "tcp")
        for ratio in (2, 10)
        for lossy in (False, True)
    },
    **RETHINK_BROWSERS,
    **rethink_cells.RETHINK_FINDINGS,
}
TCPQUIC: dict[str, ClaimFunction] = {
    "tcpquic-anatomy-tcp": partial(anatomy_share, case="tcp_cumulative"),
    "tcpquic-anatomy-quic": partial(anatomy_share, case="quic_cumulative"),
    "tcpquic-anatomy-tcp-loss": partial(anatomy_share, case="tcp_loss"),
    "tcpquic-anatomy-tcp-measured": partial(anatomy_measured, protocol="tcp"),
    "tcpquic-anatomy-quic-measured": partial(anatomy_measured, protocol="quic"),
    **rethink_cells.TCPQUIC_FINDINGS,
    "tcpquic-conclusion-ack-at-least-1.5x": quic_over_tcp_ack_size,
}
CLAIMS = {"ackfreq22": ACKFREQ22, "rethink": RETHINK, "tcpquic": TCPQUIC}


def _beside_ours(paper: str, claims: CellClaims, tables: Tables, description: DatasetDescription) -> Rendered:
    """One ACK-ratio paper's claims beside ours; formula claims hold for any dataset, measured ones name it."""
    table = claims_table(paper, claims.reference, claims.functions, tables)
    return claims_rendered(table, description)


# Each paper's claims: its claims file with their functions, and its tables' cells (quicack.claims.table_cells). Each
# names its paper's claims file and functions itself (not through CLAIMS[paper]): the workflow reads from the source
# which reference files and functions a notebook uses (quicack.jobs.reference_use).
def ackfreq22_reference() -> CellClaims:
    """ackfreq22's claims: ackfreq22_claims.csv and every cell of Tables 4 and 5."""
    return with_cells(paper_claims("ackfreq22"), ACKFREQ22, *ackfreq22_cells.table_cells())


def rethink_reference() -> CellClaims:
    """rethink's claims: rethink_claims.csv and every printed cell of Table III (KB and %)."""
    return with_cells(paper_claims("rethink"), RETHINK, *rethink_cells.table_cells())


def tcpquic_reference() -> CellClaims:
    return with_cells(paper_claims("tcpquic"), TCPQUIC)


REFERENCES = {"ackfreq22": ackfreq22_reference, "rethink": rethink_reference, "tcpquic": tcpquic_reference}


def ackfreq22_claims(tables: Tables, description: DatasetDescription) -> Rendered:
    """The ackfreq22-claims artefact."""
    return _beside_ours("ackfreq22", ackfreq22_reference(), tables, description)


def rethink_claims(tables: Tables, description: DatasetDescription) -> Rendered:
    """The rethink-claims artefact."""
    return _beside_ours("rethink", rethink_reference(), tables, description)


def tcpquic_claims(tables: Tables, description: DatasetDescription) -> Rendered:
    """The tcpquic-claims artefact."""
    return _beside_ours("tcpquic", tcpquic_reference(), tables, description)


def ackratio_claims(paper: str, tables: Tables, description: DatasetDescription) -> Rendered:
    """One ACK-ratio paper's claims artefact by the paper's name."""
    return {"ackfreq22": ackfreq22_claims, "rethink": rethink_claims, "tcpquic": tcpquic_claims}[paper](
        tables, description
    )
