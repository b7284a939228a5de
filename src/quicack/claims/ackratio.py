"""Our values of the ACK-ratio papers' claims (ackfreq22, rethink, tcpquic), one function per claim id of
``data/reference/<paper>_claims.csv``: sizes from the specifications (``quicack.models.ack_overhead``) and, where
the dataset has the runs, the ACK policies measured from the receivers' qlogs (``quicack.metrics.ack_policy``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import polars as pl

from quicack.claims import ClaimFunction, Measured, claims_table
from quicack.metrics.ack_policy import ack_policy_per_run
from quicack.metrics.selection import default_ack_policy_runs
from quicack.models import ack_overhead as model
from quicack.provenance import DatasetDescription
from quicack.reference import paper_claims
from quicack.rendered import Rendered

Tables = Mapping[str, pl.DataFrame]


def formula(value: float, unit: str) -> ClaimFunction:
    """A claim our formulas decide, whatever the dataset."""
    return lambda tables: Measured(value, value, f"{value:g} {unit} (formula)", 0)


def _policies(tables: Tables) -> pl.DataFrame:
    """Per ok default-policy transfer run: its client and its measured ACK policy."""
    selected = default_ack_policy_runs(tables["runs"]).filter(pl.col("status") == "ok").select("run_id", "client_impl")
    packets = tables["packets"].join(selected, on="run_id", how="semi")
    frames = tables["frames"].join(selected, on="run_id", how="semi")
    return selected.join(ack_policy_per_run(packets, frames), on="run_id")


def client_ack_sizes(tables: Tables) -> Measured:
    """Range over clients of the median ACK-only packet size (each client: median over its runs)."""
    per_client = (
        _policies(tables)
        .group_by("client_impl")
        .agg(pl.col("ack_bytes_median").median(), pl.len().alias("runs"))
        .drop_nulls("ack_bytes_median")
        .sort("ack_bytes_median", "client_impl")
    )
    if per_client.is_empty():
        return Measured.unmeasured("no transfer of at least 1 MB with a default ACK policy and frames in the client qlog")
    low, high = per_client["ack_bytes_median"].min(), per_client["ack_bytes_median"].max()
    text = ", ".join(f"{client} {size:.0f}" for client, size in per_client.select("client_impl", "ack_bytes_median").iter_rows())
    return Measured(low, high, f"{low:.0f}–{high:.0f} B ({text})", int(per_client["runs"].sum()))


def client_ack_ratio(tables: Tables, client: str) -> Measured:
    """Median over the client's runs of its median measured ACK ratio."""
    runs = _policies(tables).filter(pl.col("client_impl") == client).drop_nulls("ack_ratio_median")
    if runs.is_empty():
        return Measured.unmeasured(f"no {client} transfer of at least 1 MB with its default ACK policy")
    value = float(runs["ack_ratio_median"].median())
    spread = f"p10–p90 {runs['ack_ratio_p10'].min():.0f}–{runs['ack_ratio_p90'].max():.0f}"
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


ACKFREQ22: dict[str, ClaimFunction] = {
    "ackfreq22-5.2-min-quic-ack": formula(model.quic_ack().size, "B"),
    "ackfreq22-5.2-min-quic-ack-ipv6": formula(model.quic_ack(model.IPV6_HEADER).size, "B"),
    "ackfreq22-5.2-tcp-loss-min": formula(model.tcp_ack(sack_blocks=1).size, "B"),
    "ackfreq22-5.2-tcp-loss-max": formula(model.largest_tcp_ack().size, "B"),
    "ackfreq22-5.2-client-ack-sizes": client_ack_sizes,
    **{f"ackfreq22-tab02-{client}-ar": partial(client_ack_ratio, client=client) for client in ("aioquic", "quic-go", "ngtcp2")},
}
RETHINK: dict[str, ClaimFunction] = {
    "rethink-V-simple-quic-ack": formula(model.quic_ack().size, "B"),
    "rethink-V-quic-vs-tcp-ack": quic_to_tcp_ack_ratio,
    "rethink-V-quic-range-growth": formula(model.quic_ack(extra_ranges=1).size, "B"),
}
TCPQUIC: dict[str, ClaimFunction] = {
    "tcpquic-anatomy-tcp": partial(anatomy_share, case="tcp_cumulative"),
    "tcpquic-anatomy-quic": partial(anatomy_share, case="quic_cumulative"),
    "tcpquic-anatomy-tcp-loss": partial(anatomy_share, case="tcp_loss"),
}
CLAIMS = {"ackfreq22": ACKFREQ22, "rethink": RETHINK, "tcpquic": TCPQUIC}


def ackratio_claims(paper: str, tables: Tables, description: DatasetDescription) -> Rendered:
    """One ACK-ratio paper's claims beside ours; formula claims hold for any dataset, measured ones name it."""
    table = claims_table(paper, paper_claims(paper), CLAIMS[paper], tables)
    return Rendered(table.with_columns(pl.lit(description.source_label()).alias("our_source")))


def ackfreq22_claims(tables: Tables, description: DatasetDescription) -> Rendered:
    """The ackfreq22-claims artefact."""
    return ackratio_claims("ackfreq22", tables, description)


def rethink_claims(tables: Tables, description: DatasetDescription) -> Rendered:
    """The rethink-claims artefact."""
    return ackratio_claims("rethink", tables, description)


def tcpquic_claims(tables: Tables, description: DatasetDescription) -> Rendered:
    """The tcpquic-claims artefact."""
    return ackratio_claims("tcpquic", tables, description)
