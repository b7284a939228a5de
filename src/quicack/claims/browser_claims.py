"""Our values of the ACK-ratio papers' claims about Chrome/Chromium and Firefox (ackfreq22 Table 2 and Fig. 3, rethink
Fig. 1 and Table III), from the browsers' own downloads (``quicack.testbed.browsers``: Debian's Chromium and Firefox
ESR, whose QUIC is neqo) with their fixed ACK policies. Collected into ``quicack.claims.ackratio``."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import polars as pl

from quicack.claims import ClaimFunction, Measured
from quicack.metrics.ack_policy import captured_acks, default_ack_policies
from quicack.metrics.rethink_volume import claims_volume_table, reduced_wire
from quicack.metrics.return_path import counted_median, return_packet_sizes
from quicack.metrics.scalars import number, optional_number
from quicack.metrics.selection import RETHINK_PROFILE, MissingData, default_ack_policy_runs, rethink_runs
from quicack.models import ack_overhead as model
from quicack.storage.run_batches import RunRows, in_memory, per_run_batches

Tables = Mapping[str, RunRows]
CHROMIUM, FIREFOX = "chromium", "firefox"
# Chrome's two phases (ackfreq22 Table 2 "2, then 10"; Eq. (4)'s P_init = 100): ACKs of packets below this number
# belong to the first, those from CHROME_LATE_FROM on to the second (room for the ACKs in flight at the switch).
CHROME_EARLY_PACKETS = 100
CHROME_LATE_FROM = 150
# ackfreq22 §5.2: TCP at AR 2 sends a 40-byte ACK per two 1500-byte segments.
TCP_AR2_SHARE_PERCENT = 100.0 * model.tcp_ack().size / (2 * 1500)


def _browser_runs(tables: Tables, browser: str) -> pl.DataFrame:
    """The ok downloads of ≥ 1 MB by ``browser`` with its own ACK policy."""
    runs = default_ack_policy_runs(in_memory(tables["runs"]))
    return runs.filter((pl.col("status") == "ok") & (pl.col("client_impl") == browser))


def browser_ack_policy(tables: Tables, browser: str) -> pl.DataFrame:
    """Per ok download of the browser: its measured ACK policy (``default_ack_policies``)."""
    runs = _browser_runs(tables, browser)
    if runs.is_empty():
        return pl.DataFrame()
    ack_runs = tables.get("ack_runs")
    ack_runs = in_memory(ack_runs) if ack_runs is not None else None
    return default_ack_policies(runs.select("run_id"), tables["packets"], tables["frames"], ack_runs)


def ack_ratio(tables: Tables, browser: str) -> Measured:
    """Median over the browser's downloads of each download's median ACK ratio, from its qlog or the capture."""
    per_run = browser_ack_policy(tables, browser)
    if per_run.is_empty():
        return Measured.unmeasured(f"no {browser} download of at least 1 MB")
    value = number(per_run["ack_ratio_median"].median())
    sources = ", ".join(sorted(set(per_run["measured_from"])))
    spread = f"p10–p90 {number(per_run['ack_ratio_p10'].min()):.0f}–{number(per_run['ack_ratio_p90'].max()):.0f}"
    return Measured(value, value, f"{value:g} ({browser}; {spread}; from the {sources})", per_run.height)


def ack_size(tables: Tables, browser: str) -> Measured:
    """Median over the browser's downloads of its median ACK-only packet (IPv4)."""
    per_run = browser_ack_policy(tables, browser)
    sizes = per_run.drop_nulls("ack_bytes_median") if not per_run.is_empty() else per_run
    if sizes.is_empty():
        return Measured.unmeasured(f"no {browser} download of at least 1 MB with its ACK-only packets measured")
    value = number(sizes["ack_bytes_median"].median())
    return Measured(value, value, f"{value:.0f} B ({browser}, IPv4, median ACK-only packet)", sizes.height)


# ackfreq22 §5.2's "QUIC clients used sizes of 60-80 B" are Table 2's measured sizes: quicly 67, neqo 63, chrome 66,
# picoquic 75 B. Of these, neqo (Firefox) and Chrome (Chromium) run here; quicly and picoquic have no build.
PAPER_MEASURED_CLIENTS = (FIREFOX, CHROMIUM)


def paper_clients_ack_sizes(tables: Tables) -> Measured:
    """§5.2: range over the clients whose ACK size ackfreq22 measured (Table 2's last column) and that run here, of
    each one's median ACK-only packet (``ack_size``); the clients that do not run here are named."""
    sizes = {browser: ack_size(tables, browser) for browser in PAPER_MEASURED_CLIENTS}
    measured = {browser: m for browser, m in sizes.items() if m.low is not None}
    if not measured:
        return Measured.unmeasured("no Firefox (neqo) or Chromium download of at least 1 MB with its ACK-only packets")
    low = min(number(m.low) for m in measured.values())
    high = max(number(m.high) for m in measured.values())
    parts = ", ".join(f"{browser} {number(m.low):.0f}" for browser, m in sorted(measured.items(), key=lambda i: i[0]))
    missing = [browser for browser in PAPER_MEASURED_CLIENTS if browser not in measured]
    text = f"{low:.0f}–{high:.0f} B ({parts}; quicly and picoquic: no build here"
    text += f"; {', '.join(missing)}: no download" if missing else ""
    return Measured(low, high, text + ")", sum(m.runs for m in measured.values()))


def chrome_two_phases(tables: Tables) -> Measured:
    """Chromium's ACK ratio before packet 100 and from packet 150 on (the captured ACKs' advance, medians over every
    ACK of every download): ours is the later phase's, the text gives both."""
    runs = _browser_runs(tables, CHROMIUM)
    if runs.is_empty() or "frames" not in tables:
        return Measured.unmeasured("no chromium download of at least 1 MB")
    acks = per_run_batches(captured_acks, runs["run_id"], tables["frames"]).filter(pl.col("largest_acked_advance") > 0)
    early = optional_number(
        acks.filter(pl.col("largest_acked") < CHROME_EARLY_PACKETS)["largest_acked_advance"].median()
    )
    late = optional_number(acks.filter(pl.col("largest_acked") >= CHROME_LATE_FROM)["largest_acked_advance"].median())
    if early is None or late is None:
        return Measured.unmeasured("no captured ACKs of chromium's downloads")
    text = f"{early:g} for the first {CHROME_EARLY_PACKETS} packets, then {late:g} (chromium, captured ACKs)"
    return Measured(late, late, text, runs.height)


def client_share_of_total(tables: Tables, browser: str) -> Measured:
    """ackfreq22 Fig. 3's 'percentage of the total traffic': the client's IP bytes over both directions' of each
    download (``ack_runs``, client-side capture, whole connection), range over the browser's downloads over paths
    without added loss."""
    runs = _browser_runs(tables, browser).filter(
        ~pl.col("path_profile").cast(pl.Utf8).fill_null("").str.contains("loss")
    )
    if runs.is_empty() or "ack_runs" not in tables:
        return Measured.unmeasured(f"no {browser} download of at least 1 MB")
    shares = (
        in_memory(tables["ack_runs"])
        .join(runs.select("run_id"), on="run_id", how="semi")
        .select(
            (100.0 * pl.col("return_ip_bytes") / (pl.col("return_ip_bytes") + pl.col("forward_ip_bytes"))).alias(
                "share"
            )
        )
        .drop_nulls()
    )
    if shares.is_empty():
        return Measured.unmeasured(f"no client-side capture of {browser}'s downloads")
    low, high = number(shares["share"].min()), number(shares["share"].max())
    return Measured(
        low,
        high,
        f"{low:.2f}–{high:.2f} % ({browser}, client IP bytes / all IP bytes, {shares.height} downloads)",
        shares.height,
    )


def _rethink_browser_runs(tables: Tables, browser: str) -> pl.DataFrame:
    return rethink_runs(in_memory(tables["runs"]), (RETHINK_PROFILE,), (), default_policy_receivers=(browser,)).filter(
        pl.col("status") == "ok"
    )


def return_size_median(tables: Tables, browser: str) -> Measured:
    """rethink Fig. 1: the browser's median return-path IP packet after the first RTT, 10 MB, no loss."""
    ok = _rethink_browser_runs(tables, browser)
    if ok.is_empty() or "datagrams" not in tables:
        return Measured.unmeasured(f"no {browser} 10 MB download over {RETHINK_PROFILE}")
    try:
        sizes = reduced_wire(
            ok, tables["datagrams"], tables.get("tcp_segments"), return_packet_sizes, f"{browser} downloads"
        )
    except MissingData as missing:
        return Measured.unmeasured(str(missing))
    value = counted_median(sizes, "ip_bytes")
    return Measured(value, value, f"{value:.0f} B ({browser}, own ACK policy, {RETHINK_PROFILE}, measured)", ok.height)


def return_volume(tables: Tables, browser: str, lossy: bool) -> Measured:
    """rethink Table III: the browser's return KB per 10 MB forward (2 MB loss runs scaled ×5)."""
    try:
        table = claims_volume_table(tables)
    except MissingData as missing:
        return Measured.unmeasured(str(missing))
    rows = table.filter((pl.col("configuration") == f"{browser} (own policy)") & (pl.col("lossy") == lossy))
    if rows.is_empty():
        return Measured.unmeasured(f"no {browser} download over rethink-satellite{'-loss1' if lossy else ''}")
    kb, runs, scaled = rows.select("return_kb_per_10mb", "runs", "scaled_from").row(0)
    return Measured(kb, kb, f"{kb:.0f} KB ({browser}, own ACK policy; {scaled})", runs)


def _formula(value: float, unit: str) -> ClaimFunction:
    return lambda tables: Measured(value, value, f"{value:.2f} {unit} (formula)", 0)


ACKFREQ22_BROWSERS: dict[str, ClaimFunction] = {
    "ackfreq22-tab02-chrome-ar": chrome_two_phases,
    "ackfreq22-tab02-neqo-ar": partial(ack_ratio, browser=FIREFOX),
    "ackfreq22-tab02-chrome-ack-size": partial(ack_size, browser=CHROMIUM),
    "ackfreq22-tab02-neqo-ack-size": partial(ack_size, browser=FIREFOX),
    "ackfreq22-5.2-client-ack-sizes": paper_clients_ack_sizes,
    "ackfreq22-5.2-fig3-firefox-share": partial(client_share_of_total, browser=FIREFOX),
    "ackfreq22-5.2-fig3-chromium-share": partial(client_share_of_total, browser=CHROMIUM),
    "ackfreq22-5.2-fig3-tcp-share": _formula(TCP_AR2_SHARE_PERCENT, "%"),
}
RETHINK_BROWSERS: dict[str, ClaimFunction] = {
    "rethink-V-fig1-median-chromium": partial(return_size_median, browser=CHROMIUM),
    "rethink-tab3-chromium-noloss": partial(return_volume, browser=CHROMIUM, lossy=False),
    "rethink-tab3-chromium-loss": partial(return_volume, browser=CHROMIUM, lossy=True),
}
