"""Our values of imc24's testbed claims (§4.1–4.2, Appendices C–F), one function per claim id of
``data/reference/imc24_claims.csv``.

Every function reads the tables of one dataset (``handshake_runs``, ``runs``, ``frames``) and
returns a ``Measured``. RTT 9 ms is the paper's default RTT for the per-client numbers.

The claims that depend on the server's stack delay compare runs recorded under the paper's conditions (scenarios
``<scenario>_paper``: each client's ServerHello held to the delay imc24 §4.1 gives it, every implementation set as
the paper's; config/testbed_paper_conditions.yaml); the same claims on this machine's own stack delay carry the id
suffix ``-this-machine``. TTFB is the client-side capture's where the runs have one (the embedded dataset's) and the
client qlog's otherwise (the dataset 'paper' keeps the client's qlog alone, which is what imc24 analysed;
``selection.ttfb_metric``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path

import polars as pl

from quicack.claims import ClaimFunction, Measured, claims_rendered, claims_table
from quicack.layout import PAPER_CONDITIONS_SUFFIX
from quicack.metrics import guidelines, summary, sweet_spot
from quicack.metrics.scalars import number
from quicack.metrics.selection import (
    FIRST_SAMPLE_UNAFFECTED,
    PAPER_IMPLEMENTATION,
    as_recorded,
    delay_sweep_runs,
    pto_runs,
    second_flight_runs,
    table3_runs,
    ttfb_metric,
)
from quicack.metrics.server_ack_delay import server_ack_delay_table
from quicack.provenance import DatasetDescription
from quicack.reference import paper_claims, paper_table, read_claims
from quicack.rendered import Rendered
from quicack.storage.run_batches import RunRows, in_memory

Tables = Mapping[str, RunRows]
DEFAULT_RTT_MS = 9.0
# A TTFB margin below this is run-to-run jitter, not a preference (as in Table 2).
TIE_MS = guidelines.TIE_MS


def _fmt(value: float | None, unit: str = "ms") -> str:
    return "n/a" if value is None else f"{value:.1f} {unit}".strip()


def _range(
    values: pl.Series, runs: int, unit: str = "ms", labels: pl.Series | None = None, reaches: pl.Series | None = None
) -> Measured:
    """Our range over ``values`` (nulls dropped, with ``labels``/``reaches`` aligned to them); with
    ``reaches`` (how far each value's bootstrap interval reaches, ``interval_reach``) the spread is that
    of the two values that bound the range, the ones agreement is decided on."""
    keep = values.is_not_null()
    values = values.filter(keep)
    if values.is_empty():
        return Measured.unmeasured("no runs with this metric")
    low, high = number(values.min()), number(values.max())
    lowest, highest = values.arg_min(), values.arg_max()
    assert lowest is not None and highest is not None  # values is not empty
    text = f"{low:.1f}–{high:.1f} {unit}" if low != high else _fmt(low, unit)
    if labels is not None:
        labels = labels.filter(keep)
        text += f" ({labels[lowest]} … {labels[highest]})"
    spread = None
    if reaches is not None:
        reaches = reaches.filter(keep)
        spread = max(float(reaches[lowest]), float(reaches[highest]))
        text += f", ± {spread:.1f} {unit} (95 % bootstrap over the runs)"
    return Measured(low, high, text, runs, spread=spread)


def ttfb_difference(tables: Tables, scenario: str, rtt_ms: float = DEFAULT_RTT_MS) -> pl.DataFrame:
    """Per client of ``scenario`` at ``rtt_ms``: ``iack_advantage_ms`` = WFC − IACK median TTFB
    (positive: the instant ACK is faster), its 95 % bootstrap interval's ``reach_ms`` and the ok
    runs behind both medians."""
    handshakes = in_memory(tables["handshake_runs"])
    runs = handshakes.filter((pl.col("scenario") == scenario) & (pl.col("rtt_ms") == rtt_ms))
    return (
        summary.mode_difference_interval(runs, ttfb_metric(handshakes, scenario), ["client_impl", "rtt_ms"])
        .filter(pl.col("wfc_minus_iack").is_not_null())
        .select(
            "client_impl", "rtt_ms", pl.col("wfc_minus_iack").alias("iack_advantage_ms"),
            summary.interval_reach("wfc_minus_iack", "wfc_minus_iack_low", "wfc_minus_iack_high").alias("reach_ms"),
            (pl.col("iack_runs") + pl.col("wfc_runs")).alias("runs"),
        )
        .sort("client_impl")
    )  # fmt: skip


def ttfb_iack_advantage(tables: Tables, scenario: str) -> pl.DataFrame:
    """Per client and RTT of ``scenario``: ``iack_advantage_ms`` = WFC − IACK median TTFB
    (positive: the instant ACK is faster) and the ok runs behind both medians."""
    handshakes = in_memory(tables["handshake_runs"])
    return (
        guidelines.guidelines(handshakes, ttfb_metric(handshakes, scenario))
        .filter(pl.col("scenario") == scenario)
        .with_columns((pl.col("iack_runs") + pl.col("wfc_runs")).alias("runs"))
        .sort("client_impl", "rtt_ms")
    )


def stack_delay_range(tables: Tables, scenario: str = "noloss") -> Measured:
    """§4.1: difference of the clients' first RTT samples WFC − IACK (no loss: ``scenario``), median per
    client over RTTs, range over the clients that log it, go-x-net left out as in the paper."""
    if in_memory(tables["handshake_runs"]).filter(pl.col("scenario") == scenario).is_empty():
        return Measured.unmeasured(f"no runs of {scenario}")
    delays = summary.stack_delay(summary.iack_wfc_runs(in_memory(tables["handshake_runs"])), scenario).filter(
        pl.col("client_impl") != "go-x-net"
    )
    per_client = (
        delays.group_by("client_impl")
        .agg(pl.col("first_rtt_wfc_minus_iack_ms").median())
        .drop_nulls()
        .sort("client_impl")
    )
    runs = (
        summary.iack_wfc_runs(in_memory(tables["handshake_runs"]))
        .filter((pl.col("scenario") == scenario) & (pl.col("client_impl") != "go-x-net"))
        .height
    )
    return _range(per_client["first_rtt_wfc_minus_iack_ms"], runs, labels=per_client["client_impl"])


def stack_delay_per_client(tables: Tables, scenario: str) -> Measured:
    """§4.1 under the paper's conditions: each client's first-RTT-sample difference WFC − IACK (median over its runs
    of ``scenario``, go-x-net left out as in the paper) beside the delay the testbed held its ServerHello to, imc24's
    value for that client or the middle of the paper's range (data/reference/imc24_stack_delay.csv): the check that
    the runs are what they say, reported as calibrated."""
    measured = stack_delay_range(tables, scenario)
    if measured.low is None:
        return measured
    delays = (
        summary.stack_delay(summary.iack_wfc_runs(in_memory(tables["handshake_runs"])), scenario)
        .filter(pl.col("client_impl") != "go-x-net")
        .group_by("client_impl")
        .agg(pl.col("first_rtt_wfc_minus_iack_ms").median())
        .drop_nulls()
        .join(paper_table("imc24", "stack_delay").select(pl.col("client").alias("client_impl"), "paper_median_ms"),
              on="client_impl", how="left")
        .sort("client_impl")
    )  # fmt: skip
    per_client = "; ".join(
        f"{client} {delay:.1f} (set {target:g})" if target is not None else f"{client} {delay:.1f}"
        for client, delay, target in delays.select("client_impl", "first_rtt_wfc_minus_iack_ms", "paper_median_ms")
        .iter_rows()
    )
    return Measured(measured.low, measured.high, f"{measured.text}: {per_client} ms", measured.runs)


# imc24 §4.1: "the median PTO improvement between IACK and WFC for 100 measurements per RTT (1 ms …300 ms)".
SECTION_4_1_RTT_SPAN_MS = (1.0, 300.0)
# A run's client PTO expiries, from the best record it keeps: the client-side capture, else the capture's rule on the
# client's qlog, else the rises of the PTO count the client logged (quic-go logs it only now and then).
CLIENT_PTO_EXPIRIES = pl.coalesce("client_pto_expiries", "client_pto_expiries_qlog", "client_pto_expiries_logged")


# imc24 Fig. 16: "Beginning at 190 ms RTT, quic-go and aioquic only log RTT estimates after multiple RTTs. This
# correlates with their default PTO expiring at that same time" (their default PTO: 200 ms, Table 4).
DEFAULT_PTO_FROM_RTT_MS = 190.0


def default_pto_configurations(runs: pl.DataFrame, noloss: str) -> pl.DataFrame:
    """(client, RTT) configurations from ``DEFAULT_PTO_FROM_RTT_MS`` on whose client probed in most of its no-loss
    runs of ``noloss``: there, with no loss, the client's default PTO fires before any RTT sample (the ServerHello,
    and with IACK the instant ACK, arrive after it: aioquic and quic-go's 200 ms, ngtcp2's 300 ms at 300 ms RTT).
    imc24 leaves them out of §4.1's range ("Accounting for the influence of the default PTO …"). Below that RTT a
    probe in a no-loss run has other causes (Firefox's own processing delays its first sample) and is kept."""
    return (
        runs.filter((pl.col("scenario") == noloss) & (pl.col("status") == "ok")
                    & (pl.col("rtt_ms") >= DEFAULT_PTO_FROM_RTT_MS))  # fmt: skip
        .group_by("client_impl", "rtt_ms")
        .agg((CLIENT_PTO_EXPIRIES > 0).mean().alias("probed_share"))
        .filter(pl.col("probed_share") > 0.5)
        .select("client_impl", "rtt_ms")
        .sort("rtt_ms", "client_impl")
    )


def pto_improvement_range(tables: Tables, scenarios: tuple[str, ...] = FIRST_SAMPLE_UNAFFECTED) -> Measured:
    """§4.1 / Fig. 16: median first-PTO improvement WFC − IACK (logged), range over clients and
    RTTs, in the scenarios whose first RTT sample the emulated loss does not touch; not measured unless the runs
    reach both ends of the paper's RTT span (``SECTION_4_1_RTT_SPAN_MS``): a range over 1–300 ms is not one RTT's."""
    runs = pto_runs(in_memory(tables["handshake_runs"]), scenarios)
    if runs.is_empty():
        return Measured.unmeasured(f"no runs of {' or '.join(scenarios)}")
    improvement = summary.pto_improvement(runs, "first_pto_logged_ms", scenarios).drop_nulls("pto_improvement_ms")
    low_end, high_end = SECTION_4_1_RTT_SPAN_MS
    rtts = sorted(improvement["rtt_ms"].unique().to_list())
    if not rtts or rtts[0] > low_end or rtts[-1] < high_end:
        return Measured.unmeasured(
            f"{' or '.join(scenarios)} recorded at RTT {', '.join(f'{r:g}' for r in rtts) or 'none'} ms, not over the "
            f"claim's {low_end:g}–{high_end:g} ms"
        )
    left_out = default_pto_configurations(runs, scenarios[0])
    improvement = improvement.join(left_out, on=["client_impl", "rtt_ms"], how="anti")
    labels = improvement.select(pl.col("client_impl") + " @ " + pl.col("rtt_ms").cast(pl.Int64).cast(pl.Utf8) + " ms")[
        "client_impl"
    ]
    reaches = improvement.select(
        summary.interval_reach("pto_improvement_ms", "pto_improvement_low_ms", "pto_improvement_high_ms")
    )
    measured = _range(improvement["pto_improvement_ms"], runs.height, labels=labels, reaches=reaches.to_series())
    if left_out.is_empty() or measured.low is None:
        return measured
    by_rtt = left_out.group_by("rtt_ms", maintain_order=True).agg(pl.col("client_impl").sort())
    named = "; ".join(f"{', '.join(clients)} @ {rtt:g} ms" for rtt, clients in by_rtt.iter_rows())
    return replace(measured, text=f"{measured.text}; left out as the paper does, their default PTO expiring before "
                                  f"any RTT sample in most no-loss runs: {named}")


def ttfb_advantage_of(tables: Tables, scenario: str, client: str, sign: float = 1.0) -> Measured:
    """One client's median TTFB advantage of IACK (``sign`` -1: of WFC) at the default RTT, its
    spread from the bootstrap over the runs."""
    rows = ttfb_difference(tables, scenario).filter(pl.col("client_impl") == client)
    if rows.is_empty():
        return Measured.unmeasured(f"no {client} runs of {scenario} at {DEFAULT_RTT_MS:g} ms")
    value, reach = sign * rows["iack_advantage_ms"][0], rows["reach_ms"][0]
    return Measured(
        value,
        value,
        f"{_fmt(value)} ± {reach:.1f} ms (95 % bootstrap over the runs)",
        int(rows["runs"][0]),
        spread=reach,
    )


def wfc_advantage_range(tables: Tables, scenario: str) -> Measured:
    rows = ttfb_difference(tables, scenario)
    return _range(
        -rows["iack_advantage_ms"], int(rows["runs"].sum()), labels=rows["client_impl"], reaches=rows["reach_ms"]
    )


def share_of_configurations(tables: Tables, scenario: str, preferred: str, rtts_ms: tuple[float, ...]) -> Measured:
    """Share of (client, RTT) configurations of ``scenario`` at the paper's ``rtts_ms`` (the RTTs of its figure the
    claim speaks of) where ``preferred`` had the lower median TTFB by at least ``TIE_MS``; not measured unless every
    one of those RTTs has runs: a claim about all RTTs below 100 ms is not decided at 9 ms alone (the dataset
    'paper' before its parts B)."""
    rows = ttfb_iack_advantage(tables, scenario).filter(pl.col("rtt_ms").is_in(rtts_ms))
    if rows.is_empty():
        return Measured.unmeasured(f"no {scenario} configurations in that RTT range")
    missing = sorted(set(rtts_ms) - set(rows["rtt_ms"].to_list()))
    if missing:
        recorded = ", ".join(f"{r:g}" for r in sorted(rows["rtt_ms"].unique()))
        return Measured.unmeasured(
            f"{scenario} recorded at RTT {recorded} ms only, not at {', '.join(f'{r:g}' for r in missing)} ms "
            f"(the claim spans {', '.join(f'{r:g}' for r in rtts_ms)} ms)"
        )
    wins = rows.filter(
        pl.col("iack_advantage_ms") >= TIE_MS if preferred == "iack" else pl.col("iack_advantage_ms") <= -TIE_MS
    )
    share = wins.height / rows.height
    rtts = ", ".join(f"{r:g}" for r in sorted(rows["rtt_ms"].unique()))
    return Measured(
        share,
        share,
        f"{wins.height} of {rows.height} client×RTT configurations (RTT {rtts} ms)",
        int(rows["runs"].sum()),
    )


def client_probes_before_coalesced_hello(tables: Tables, clients: tuple[str, ...]) -> Measured:
    """§4.1 (Fig. 5): with WFC and a 5,113 B certificate, the client's default PTO expires before
    the coalesced ACK–ServerHello arrives: share of those runs with a client PTO expiry, under the paper's
    conditions where the dataset has them (``as_recorded``). A run's expiries are the client-side capture's probes
    (``client_pto_expiries``) or, where the run keeps the client's qlog alone, the same rule on the client's logged
    packets (``client_pto_expiries_qlog``; equal to the capture's in every such run of the embedded dataset), else
    the rises of the PTO count the client logged (``client_pto_expiries_logged``, which quic-go logs only now and
    then); a run with none of these is not measured, and said so."""
    handshakes = in_memory(tables["handshake_runs"])
    runs = summary.iack_wfc_runs(handshakes).filter(
        (pl.col("scenario") == as_recorded(handshakes, "amplification"))
        & (pl.col("mode") == "wfc")
        & pl.col("client_impl").is_in(clients)
        & (pl.col("status") == "ok")
    )
    if runs.is_empty():
        return Measured.unmeasured("no WFC amplification runs of these clients")
    expiries = CLIENT_PTO_EXPIRIES
    measured = runs.filter(expiries.is_not_null())
    silent = sorted(set(runs["client_impl"]) - set(measured["client_impl"]))
    why = f" ({', '.join(silent)}: no capture, and neither packets nor a PTO count in its qlog)" if silent else ""
    if measured.is_empty():
        return Measured.unmeasured("no client PTO expiries known" + why)
    probed = measured.filter(expiries > 0).height
    share = probed / measured.height
    return Measured(share, share, f"{probed} of {measured.height} runs{why}", measured.height)


def server_first_ack_delay(tables: Tables, server: str) -> Measured:
    """Appendix D / Table 3: ACK Delay of the server's first Initial ACK, range over repetitions, from the runs
    Table 3 reads: the handshake test case of the server as released (mode null) where there is one, else the
    server's IACK/WFC runs."""
    runs = table3_runs(in_memory(tables["runs"])).filter(pl.col("server_impl") == server)
    if runs.filter(pl.col("mode").is_null()).height:
        runs = runs.filter(pl.col("mode").is_null())  # the server as released, as the paper's QIR servers
    table = server_ack_delay_table(runs, tables["frames"], ("server_impl", "mode"))
    columns = [c for c in table.columns if c.startswith("initial_")]
    if table.is_empty() or not columns:
        return Measured.unmeasured(f"no captures of a {server} server")
    values = table.select(pl.concat_list(columns).alias("v")).explode("v")["v"]
    return _range(values, runs.height)


# Appendix D's summary of Table 3, over the servers our dataset runs (Table 3's rows with a claim of their own).
TABLE3_SERVERS = ("aioquic", "quic-go", "ngtcp2", "quinn")


def nonzero_first_ack_delays(tables: Tables) -> Measured:
    """Appendix D: the range of the first Initial ACK's ACK Delay over our servers that report more than 0 ms."""
    measured = {server: server_first_ack_delay(tables, server) for server in TABLE3_SERVERS}
    nonzero = {server: m for server, m in measured.items() if m.low is not None and m.high is not None and m.high > 0}
    if not nonzero:
        return Measured.unmeasured("no server of ours reports a first Initial ACK Delay above 0 ms")
    low, high = min(number(m.low) for m in nonzero.values()), max(number(m.high) for m in nonzero.values())
    text = ", ".join(f"{server} {m.text}" for server, m in sorted(nonzero.items()))
    return Measured(low, high, f"{low:.1f}–{high:.1f} ms ({text})", sum(m.runs for m in nonzero.values()))


def zero_delay_servers_match(tables: Tables) -> Measured:
    """Appendix D: which of our servers report an ACK Delay of 0 ms in their first Initial ACK, against Table 3's
    printed repetitions of the same servers (imc24_tab03.csv)."""
    printed = paper_table("imc24", "tab03").filter(pl.col("pn_space") == "initial").drop_nulls("ack_delay_ms")
    paper_zero = set(
        printed.group_by("server")
        .agg((pl.col("ack_delay_ms").cast(pl.Float64) == 0).all().alias("zero"))
        .filter("zero")["server"]
    )
    measured = {server: server_first_ack_delay(tables, server) for server in TABLE3_SERVERS}
    ours = {server: m for server, m in measured.items() if m.low is not None}
    if not ours:
        return Measured.unmeasured("no captures of any of our servers' first Initial ACK")
    zero = {server for server, m in ours.items() if m.high == 0}
    expected = paper_zero & set(ours)
    text = (
        f"0 ms: {', '.join(sorted(zero)) or 'none'} of {', '.join(sorted(ours))} (Table 3: "
        f"{', '.join(sorted(expected)) or 'none'} of them)"
    )
    return Measured(None, None, text, sum(m.runs for m in ours.values()), matches=zero == expected)


def default_pto_of(tables: Tables, client: str) -> Measured:
    """Appendix E / Table 4: the client's default PTO (first probe before any server datagram),
    else only a lower bound (open range)."""
    rows = summary.default_pto_by_client(summary.iack_wfc_runs(in_memory(tables["handshake_runs"]))).filter(
        pl.col("client_impl") == client
    )
    if rows.is_empty():
        return Measured.unmeasured(f"no {client} runs")
    row = rows.row(0, named=True)
    if row["default_pto_ms"] is not None:
        return Measured(
            row["default_pto_ms"], row["default_pto_ms"], _fmt(row["default_pto_ms"]), int(row["runs_with_probe"])
        )
    bound = row["default_pto_lower_bound_ms"]
    if bound is None:  # runs without a client-side capture (the client's qlog alone)
        return Measured.unmeasured(f"no {client} run with a client-side capture of its first datagrams")
    return Measured(bound, float("inf"), f"> {bound:.0f} ms (lower bound: no run made the client probe first)", 0)


def second_flight_of(tables: Tables, client: str) -> Measured:
    """Appendix E / Table 4: datagram indices of the second client flight (most frequent over the
    9 ms runs of Table 4's scenario), per mode; matches when every mode shows the paper's indices (Firefox's
    against the paper's neqo)."""
    paper_client = PAPER_IMPLEMENTATION.get(client, client)
    paper = paper_table("imc24", "tab04").filter(pl.col("client") == paper_client)["second_flight"].first()
    rows = summary.second_flight_by_client(
        summary.iack_wfc_runs(second_flight_runs(in_memory(tables["handshake_runs"])))
    ).filter(pl.col("client_impl") == client)
    if rows.is_empty():
        return Measured.unmeasured(f"no calibrated {client} runs")
    indices = {
        mode: flight.replace("_", ",") for mode, flight in rows.select("mode", "second_flight_datagrams").iter_rows()
    }
    text = "; ".join(f"{mode}: {flight}" for mode, flight in sorted(indices.items()))
    return Measured(
        None, None, text, int(rows["runs"].sum()), matches=all(flight == paper for flight in indices.values())
    )


def rtt_sample_share(tables: Tables, client: str) -> Measured:
    """Appendix E / Fig. 11: share of the RFC 9002 RTT samples the client exposed in its qlog."""
    rows = summary.rtt_sample_exposure(summary.iack_wfc_runs(in_memory(tables["handshake_runs"]))).filter(
        pl.col("client_impl") == client
    )
    if rows.is_empty() or rows["exposed_share"][0] is None:
        return Measured.unmeasured(f"no {client} transfer with both counts")
    row = rows.row(0, named=True)
    share = row["exposed_share"]
    return Measured(
        share,
        share,
        f"{share:.3f} ({row['rtt_samples_logged']:.0f} of {row['rtt_samples_rfc9002']:.0f})",
        int(row["runs"]),
    )


def guideline_cell(tables: Tables, certificate: str, condition: str, held: bool) -> Measured:
    """Appendix C / Table 2: one cell as ``imc24-tab02`` computes it from the measured TTFB, on the runs with the
    ServerHello ``held`` to the paper's stack delay or on this machine's own (guidelines.classify_configurations)."""
    paper = paper_table("imc24", "tab02")
    handshakes, runs = in_memory(tables["handshake_runs"]), in_memory(tables["runs"])
    table = guidelines.guidelines_beside_paper(handshakes, runs, paper, tables["datagrams"], held=held)
    cell_of_claim = paper.filter((pl.col("certificate_id") == certificate) & (pl.col("condition_id") == condition))
    row = table.join(cell_of_claim.select("certificate", "condition"), on=["certificate", "condition"], how="semi")
    if row.is_empty() or row["configurations"][0] == 0:
        stack = "under the paper's stack delay" if held else "on this machine's own stack delay"
        return Measured.unmeasured(f"no such configuration in the data {stack}")
    cell = row.row(0, named=True)
    compared = guidelines.compared_configurations(handshakes, runs, tables["datagrams"], held=held).filter(
        (pl.col("certificate") == cell["certificate"]) & (pl.col("condition") == cell["condition"])
    )
    counted = int(compared.select(pl.col("iack_runs") + pl.col("wfc_runs")).sum().item())
    return Measured(None, None, f"{cell['ours']}; {cell['measured_in']}", counted, matches=cell["agrees"] == "yes")


def _sweet_spot(tables: Tables) -> tuple[pl.DataFrame, int]:
    runs = delay_sweep_runs(in_memory(tables["handshake_runs"]), in_memory(tables["runs"]))
    return sweet_spot.sweet_spot_cells(runs), runs.filter(pl.col("status") == "ok").height


def sweet_spot_spurious_agreement(tables: Tables) -> Measured:
    """§4.1 / Fig. 4 measured: share of the Δt sweep's (Δt, RTT) cells whose IACK runs probed (spurious:
    nothing was lost) exactly where the RFC 9002 model predicts it (Δt ≥ 3·RTT)."""
    cells, runs = _sweet_spot(tables)
    summary_ = sweet_spot.agreement_summary(cells)
    if summary_["spurious_cells"] == 0:
        return Measured.unmeasured("no IACK runs of the Δt sweep")
    if cells.filter(pl.col("cert_delay_ms") > 0).is_empty():
        # The no-loss runs alone (Δt = 0, where nobody probes) would agree by construction.
        return Measured.unmeasured("no Δt > 0 cell of the Δt sweep, only its Δt = 0 baseline")
    share = summary_["spurious_agree"] / summary_["spurious_cells"]
    differ = cells.filter(~pl.col("spurious_agrees")).select(
        pl.format("Δt {} ms @ {} ms", pl.col("cert_delay_ms").cast(pl.Int64), pl.col("rtt_ms").cast(pl.Int64))
    ).to_series()
    text = f"{summary_['spurious_agree']} of {summary_['spurious_cells']} cells" + (
        f" (differ: {', '.join(differ)})" if differ.len() else ""
    )
    return Measured(share, share, text, runs)


def sweet_spot_reduction_ratio(tables: Tables) -> Measured:
    """§4.1 / Fig. 4 measured: measured ÷ model first-PTO reduction (model 3·Δt), median over the Δt > 0
    cells of the Δt sweep, with the quartiles."""
    cells, runs = _sweet_spot(tables)
    summary_ = sweet_spot.agreement_summary(cells)
    if summary_["ratio_cells"] == 0:
        return Measured.unmeasured("no Δt > 0 cell of the Δt sweep with a logged first PTO in both modes")
    ratio = summary_["ratio_median"]
    text = (
        f"{ratio:.2f} (quartiles {summary_['ratio_q25']:.2f}–{summary_['ratio_q75']:.2f}, {summary_['ratio_cells']} "
        "cells)"
    )
    return Measured(ratio, ratio, text, runs)


# imc24 Appendix F: "We repeat all packet loss emulations with 1, 9, 20, 100, and 300 ms RTT" (Figs. 12 and 13).
APPENDIX_F_RTTS_MS = (1.0, 9.0, 20.0, 100.0, 300.0)


def _paper(scenario: str) -> str:
    """The scenario under the paper's conditions (quicack.layout.PAPER_CONDITIONS_SUFFIX)."""
    return scenario + PAPER_CONDITIONS_SUFFIX


# The claims that depend on the server's stack delay: computed on the runs under the paper's conditions (the claim
# id) and on this machine's own delay (claim id + "-this-machine"), a finding beyond the paper: how much of the
# instant ACK's effect remains with a server that answers within a millisecond.
FIG07_CLIENTS = ("aioquic", "quic-go", "ngtcp2", "go-x-net", "quiche")
TABLE4_CLIENTS = ("aioquic", "go-x-net", "ngtcp2", "quic-go", "quiche")
THIS_MACHINE = "-this-machine"


def _both_conditions(
    claim_id: str, function: Callable[..., Measured], **on_machine: str | tuple[str, ...]
) -> dict[str, ClaimFunction]:
    """``claim_id`` on the paper's conditions (every scenario argument given its _paper twin) and ``claim_id`` +
    ``-this-machine`` on the runs as named in ``on_machine``."""
    on_paper = {
        key: _paper(value) if isinstance(value, str) else tuple(_paper(item) for item in value)
        for key, value in on_machine.items()
    }
    return {claim_id: partial(function, **on_paper), claim_id + THIS_MACHINE: partial(function, **on_machine)}


CLAIMS: dict[str, ClaimFunction] = {
    "imc24-4.1-stack-delay": partial(stack_delay_per_client, scenario=_paper("noloss")),
    "imc24-4.1-stack-delay-this-machine": stack_delay_range,
    **_both_conditions("imc24-4.1-pto-improvement", pto_improvement_range, scenarios=FIRST_SAMPLE_UNAFFECTED),
    "imc24-4.1-fig04-spurious": sweet_spot_spurious_agreement,
    "imc24-4.1-fig04-pto-reduction": sweet_spot_reduction_ratio,
    **_both_conditions("imc24-4.1-fig05-ngtcp2", partial(ttfb_advantage_of, client="ngtcp2"),
                       scenario="amplification"),
    "imc24-4.1-fig05-client-probes": partial(client_probes_before_coalesced_hello, clients=("aioquic", "quic-go")),
    **_both_conditions("imc24-4.2-fig06-range", wfc_advantage_range, scenario="drop_server_flight"),
    **{
        claim_id: function
        for client in FIG07_CLIENTS
        for claim_id, function in _both_conditions(
            f"imc24-4.2-fig07-{client}", partial(ttfb_advantage_of, client=client), scenario="drop_client_flight"
        ).items()
    },
    **{f"imc24-D-tab03-{server}": partial(server_first_ack_delay, server=server)
       for server in ("aioquic", "quic-go", "ngtcp2", "quinn")},
    "imc24-D-tab03-nonzero-range": nonzero_first_ack_delays,
    "imc24-D-tab03-zero-delay-servers": zero_delay_servers_match,
    # §4.1 per client (Fig. 5): the clients the paper saw lose with an instant ACK.
    **_both_conditions("imc24-4.1-fig05-quiche-iack-loses", partial(ttfb_advantage_of, client="quiche"),
                       scenario="amplification"),
    **_both_conditions("imc24-4.1-fig05-go-x-net-iack-loses", partial(ttfb_advantage_of, client="go-x-net"),
                       scenario="amplification"),
    # Table 4 and Fig. 11 for the paper's clients that run here as libraries (mvfst and picoquic do not; neqo runs as
    # Firefox ESR's QUIC, below).
    **{f"imc24-E-tab04-pto-{client}": partial(default_pto_of, client=client) for client in TABLE4_CLIENTS},
    **{f"imc24-E-tab04-flight-{client}": partial(second_flight_of, client=client) for client in TABLE4_CLIENTS},
    **{f"imc24-E-fig11-{client}": partial(rtt_sample_share, client=client) for client in TABLE4_CLIENTS},
    # neqo, as Firefox ESR's QUIC (quicack.testbed.browsers).
    "imc24-4.1-fig05-neqo": partial(ttfb_advantage_of, scenario="amplification", client="firefox"),
    "imc24-4.2-fig07-neqo": partial(ttfb_advantage_of, scenario="drop_client_flight", client="firefox"),
    "imc24-E-tab04-pto-neqo": partial(default_pto_of, client="firefox"),
    "imc24-E-tab04-flight-neqo": partial(second_flight_of, client="firefox"),
    "imc24-F-fig12-wfc-below-100ms": partial(share_of_configurations, scenario="drop_server_flight", preferred="wfc",
                                             rtts_ms=tuple(r for r in APPENDIX_F_RTTS_MS if r < 100.0)),
    "imc24-F-fig12-iack-at-300ms": partial(
        share_of_configurations, scenario="drop_server_flight", preferred="iack", rtts_ms=(300.0,)
    ),
    "imc24-F-fig13-iack-all-rtts": partial(share_of_configurations, scenario="drop_client_flight", preferred="iack",
                                           rtts_ms=APPENDIX_F_RTTS_MS),
    # Table 2 on each stack delay: the paper's (the claim id) and this machine's own (+ "-this-machine").
    **{
        f"imc24-C-tab02-{certificate}-{condition}{suffix}": partial(
            guideline_cell, certificate=certificate, condition=condition, held=not suffix
        )
        for certificate, condition in paper_table("imc24", "tab02").select("certificate_id", "condition_id").iter_rows()
        for suffix in ("", THIS_MACHINE)
    },
}  # fmt: skip


def imc24_claims(tables: Tables, description: DatasetDescription, reference: Path | None = None) -> Rendered:
    """imc24's testbed claims beside ours, with where our numbers come from on every row (from the
    dataset's description); ``reference``: another claims file than data/reference/imc24_claims.csv."""
    claims = read_claims(reference) if reference is not None else paper_claims("imc24")
    table = claims_table("imc24", claims, CLAIMS, tables)
    return claims_rendered(table, description)
