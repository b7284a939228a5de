"""Our values of imc24's scan claims (§4.3, Appendices D and G; ``data/reference/imc24_scan_claims.csv``) from
``scan_connections`` (and, for an emulated scan, ``scan_truth``): the paper's quantity, with the authors' code's
version in the text where it differs (``quicack.metrics.scan_quantities``).

On an emulated scan the numbers are what the emulation was configured to produce, not the Internet's, so
agreement is not decided (verdict ``n/a``) and the explanation says so; on a real scan (kind ``scan``) it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import polars as pl

from quicack.claims import ClaimFunction, Measured, claims_rendered, claims_table
from quicack.metrics import scan_quantities as metric
from quicack.metrics.scalars import number
from quicack.provenance import DatasetDescription
from quicack.reference import cdn_names, paper_claims
from quicack.rendered import Rendered
from quicack.storage.run_batches import RunRows, in_memory

Tables = Mapping[str, RunRows]
EMULATED = (
    "Emulated scan: this value is what the emulated frontends were configured to produce (scan_truth), not the "
    "Internet's, so agreement is not decided."
)


def _row(frame: pl.DataFrame, column: str, value: str) -> dict | None:
    rows = frame.filter(pl.col(column) == value)
    return rows.row(0, named=True) if rows.height else None


def _first_label(name: str) -> str:
    return name.split(".")[0].lower()


def tab01_share(tables: Tables, cdn: str) -> Measured:
    scan, truth = in_memory(tables["scan_connections"]), in_memory(tables["scan_truth"])
    ours = _row(metric.iack_deployment(scan), "cdn", cdn)
    if ours is None:
        return Measured.unmeasured(
            f"no {cdn} connection with an Initial ACK and a ServerHello in the top-list measurements"
        )
    authors = _row(metric.iack_deployment(scan, "authors"), "cdn", cdn)
    configured = _row(metric.configured_iack_share(scan, truth), "cdn", cdn)
    extra = [f"authors' code {authors['iack_share_percent']:.1f} %" if authors else ""]
    if configured:
        extra.append(f"configured {configured['configured_iack_share_percent']:.1f} %")
    value = ours["iack_share_percent"]
    return Measured(value, value, f"{value:.1f} % ({'; '.join(e for e in extra if e)})", int(ours["connections"]))


def tab01_variation(tables: Tables, cdn: str) -> Measured:
    ours = _row(metric.iack_deployment(in_memory(tables["scan_connections"])), "cdn", cdn)
    if ours is None:
        return Measured.unmeasured(f"no {cdn} connection in the top-list measurements")
    value = ours["variation_percent"]
    return Measured(
        value, value, f"{value:.1f} points over {ours['measurements']} vantage point × day", int(ours["connections"])
    )


def variation_at_one_vantage_point(tables: Tables, cdn: str) -> Measured:
    per = metric.iack_share_per_measurement(metric.toplist(in_memory(tables["scan_connections"]))).filter(
        pl.col("cdn") == cdn
    )
    if per.is_empty():
        return Measured.unmeasured(f"no {cdn} connection in the top-list measurements")
    spread = per.group_by("vantage_point").agg(
        low=pl.col("iack_share_percent").min(), high=pl.col("iack_share_percent").max()
    ).with_columns(points=pl.col("high") - pl.col("low")).sort("points", "vantage_point", descending=[True, False])
    vp, low, high, points = spread.select("vantage_point", "low", "high", "points").row(0)
    return Measured(
        points, points, f"{points:.1f} points ({vp} {low:.1f} → {high:.1f} %)", int(per["connections"].sum())
    )


def median_iack_ahead(tables: Tables, cdn: str) -> Measured:
    scan = in_memory(tables["scan_connections"])
    ours = _row(metric.median_iack_ahead(scan), "cdn", cdn)
    if ours is None:
        return Measured.unmeasured(f"no {cdn} instant ACK in the top-list measurements")
    authors = _row(metric.median_iack_ahead(scan, "authors"), "cdn", cdn)
    authors_text = f"{authors['median_iack_to_sh_ms']:.1f} ms" if authors else "none left (padded instant ACKs dropped)"
    value = ours["median_iack_to_sh_ms"]
    return Measured(value, value, f"{value:.1f} ms (authors' code: {authors_text})", int(ours["connections"]))


def _domain(tables: Tables, label: str) -> dict | None:
    shares = metric.coalesced_share_per_domain(in_memory(tables["scan_connections"])).with_columns(
        label=pl.col("sni").map_elements(_first_label, pl.Utf8)
    )
    return _row(shares, "label", label)


def coalesced_share(tables: Tables, label: str) -> Measured:
    row = _domain(tables, label)
    if row is None or row["coalesced_share_percent"] is None:
        return Measured.unmeasured(f"no series connection to {label} with a ServerHello")
    value = row["coalesced_share_percent"]
    return Measured(value, value, f"{value:.1f} % of {row['with_sh']} ({row['sni']})", int(row["connections"]))


def iack_share_of_domain(tables: Tables, label: str) -> Measured:
    row = _domain(tables, label)
    if row is None or not row["with_sh"]:
        return Measured.unmeasured(f"no series connection to {label} with a ServerHello")
    value = 100.0 - row["coalesced_share_percent"]
    return Measured(value, value, f"{value:.1f} % of {row['with_sh']} ({row['sni']})", int(row["connections"]))


def iack_without_server_hello(tables: Tables, label: str) -> Measured:
    row = _domain(tables, label)
    if row is None:
        return Measured.unmeasured(f"no series connection to {label}")
    value = 100.0 * row["iack_without_sh"] / row["connections"]
    return Measured(value, value, f"{value:.1f} % of {row['connections']} ({row['sni']})", int(row["connections"]))


def series_iack_to_sh(tables: Tables, place: str) -> Measured:
    per = metric.series_iack_to_sh(in_memory(tables["scan_connections"])).filter(
        pl.col("vantage_point").map_elements(metric.place_key, pl.Utf8) == metric.place_key(place)
    )
    if per.is_empty():
        return Measured.unmeasured(f"no vantage point {place} in the series")
    value = per["median_iack_to_sh_ms"][0]
    return Measured(value, value, f"{value:.2f} ms", int(per["connections"][0]))


def pto_inflation(tables: Tables) -> Measured:
    per = metric.series_iack_to_sh(in_memory(tables["scan_connections"]))
    if per.is_empty():
        return Measured.unmeasured("no instant ACK in the series")
    low, high = 3 * number(per["median_iack_to_sh_ms"].min()), 3 * number(per["median_iack_to_sh_ms"].max())
    return Measured(
        low,
        high,
        f"{low:.1f} – {high:.1f} ms (3 × the medians of {per.height} vantage points)",
        int(per["connections"].sum()),
    )


def ack_delay_above_rtt(tables: Tables, cdn: str) -> Measured:
    scan = in_memory(tables["scan_connections"])
    ours = metric.ack_delay_exceeds_rtt(scan).filter(
        (pl.col("cdn") == cdn) & (pl.col("first_datagram_class") == metric.COALESCED)
    )
    if ours.is_empty():
        return Measured.unmeasured(f"no {cdn} coalesced ACK+ServerHello with an RTT estimate")
    authors = metric.ack_delay_exceeds_rtt(scan, "authors").filter(
        (pl.col("cdn") == cdn) & (pl.col("first_datagram_class") == metric.COALESCED)
    )
    value = ours["share_percent"][0]
    return Measured(
        value,
        value,
        f"{value:.1f} % (authors' code, ACK Delay > 0: {authors['share_percent'][0]:.1f} %)",
        int(ours["connections"][0]),
    )


def iack_ack_delay_share(tables: Tables, cdn: str, above: bool) -> Measured:
    """Appendix D / Fig. 10's instant-ACK panel: share (%) of a CDN's instant ACKs whose ACK Delay exceeds the RTT
    (``above``) or does not."""
    ours = metric.ack_delay_exceeds_rtt(in_memory(tables["scan_connections"])).filter(
        (pl.col("cdn") == cdn) & (pl.col("first_datagram_class") == metric.IACK)
    )
    if ours.is_empty():
        return Measured.unmeasured(f"no {cdn} instant ACK with an RTT estimate")
    value = ours["share_percent"][0] if above else 100.0 - ours["share_percent"][0]
    what = "above" if above else "at or below"
    return Measured(
        value,
        value,
        f"{value:.1f} % of {ours['connections'][0]} instant ACKs {what} the RTT",
        int(ours["connections"][0]),
    )


def coalesced_domains_within_1ms(tables: Tables) -> Measured:
    """Appendix D: share (%) of domains whose coalesced ACK+SH connections' RTT − ACK Delay is within 1 ms (the median
    over each domain's connections), over all CDNs."""
    coalesced = metric.ack_delay_vs_rtt(in_memory(tables["scan_connections"])).filter(
        pl.col("first_datagram_class") == metric.COALESCED
    )
    per_domain = (
        coalesced.drop_nulls("rtt_minus_ack_delay_ms")
        .group_by("sni")
        .agg(pl.col("rtt_minus_ack_delay_ms").abs().median().alias("gap"))
    )
    if per_domain.is_empty():
        return Measured.unmeasured("no coalesced ACK+SH with an RTT estimate")
    value = 100.0 * number((per_domain["gap"] < 1.0).mean())
    return Measured(value, value, f"{value:.1f} % of {per_domain.height} domains", coalesced.height)


def coalesced_faster_everywhere(tables: Tables) -> Measured:
    lines = metric.series_latency(in_memory(tables["scan_connections"]))
    if lines.is_empty():
        return Measured.unmeasured("no series measurement")
    medians = (
        lines.group_by("vantage_point", "line")
        .agg(pl.col("median_ms").median())
        .pivot("line", index="vantage_point", values="median_ms")
    )
    if "ACK,SH" not in medians.columns or "SH" not in medians.columns:
        return Measured.unmeasured("the series has no coalesced or no separate ServerHello")
    faster = medians.filter(pl.col("ACK,SH") < pl.col("SH"))
    text = ", ".join(
        f"{vp} {c:.1f} vs {s:.1f} ms"
        for vp, c, s in medians.sort("vantage_point").select("vantage_point", "ACK,SH", "SH").iter_rows()
    )
    return Measured(
        None,
        None,
        f"{faster.height} of {medians.height} vantage points ({text})",
        medians.height,
        matches=faster.height == medians.height,
    )


def vantage_point_with_most_iack(tables: Tables, cdn: str, expected_place: str) -> Measured:
    per = metric.iack_share_per_measurement(metric.toplist(in_memory(tables["scan_connections"]))).filter(
        pl.col("cdn") == cdn
    )
    if per.is_empty():
        return Measured.unmeasured(f"no {cdn} connection in the top-list measurements")
    by_vp = (
        per.group_by("vantage_point")
        .agg(
            share=pl.col("iack_connections").sum() * 100.0 / pl.col("connections").sum(),
            connections=pl.col("connections").sum(),
        )
        .sort("share", "vantage_point", descending=[True, False])
    )
    text = ", ".join(f"{vp} {share:.1f} %" for vp, share in by_vp.select("vantage_point", "share").iter_rows())
    top = by_vp["vantage_point"][0]
    return Measured(
        None,
        None,
        f"{top} ({text})",
        int(by_vp["connections"].sum()),
        matches=metric.place_key(top) == metric.place_key(expected_place),
    )


CLAIMS: dict[str, ClaimFunction] = {
    **{f"imc24-4.3-tab01-share-{cdn}": partial(tab01_share, cdn=cdn) for cdn in cdn_names()},
    "imc24-4.3-tab01-variation-Amazon": partial(tab01_variation, cdn="Amazon"),
    "imc24-4.3-amazon-one-vp": partial(variation_at_one_vantage_point, cdn="Amazon"),
    **{f"imc24-4.3-median-iack-{cdn}": partial(median_iack_ahead, cdn=cdn)
       for cdn in ("Cloudflare", "Amazon", "Google", "Akamai")},
    **{f"imc24-4.3-cf-coalesced-{label}": partial(coalesced_share, label=label)
       for label in ("discord", "cloudflare", "tinyurl", "docker")},
    "imc24-4.3-cf-no-sh-udemy": partial(iack_without_server_hello, label="udemy"),
    "imc24-4.3-cf-own-1min": partial(iack_share_of_domain, label="netd-research-seven"),
    "imc24-4.3-cf-own-60min": partial(coalesced_share, label="netd-research-one"),
    **{
        f"imc24-4.3-cf-iack-sh-{place.lower().replace(' ', '-')}": partial(series_iack_to_sh, place=place)
        for place in ("Sao Paulo", "Hamburg", "Los Angeles", "Hong Kong")
    },
    "imc24-4.3-cf-pto-inflation": pto_inflation,
    **{f"imc24-D-fig10-{cdn}": partial(ack_delay_above_rtt, cdn=cdn)
       for cdn in ("Akamai", "Amazon", "Cloudflare", "Fastly", "Meta", "Google", "Others")},
    **{f"imc24-D-fig10-iack-below-{cdn}": partial(iack_ack_delay_share, cdn=cdn, above=False)
       for cdn in ("Akamai", "Others")},
    **{f"imc24-D-fig10-iack-majority-above-{cdn}": partial(iack_ack_delay_share, cdn=cdn, above=True)
       for cdn in ("Amazon", "Cloudflare", "Google")},
    "imc24-D-fig10-coalesced-within-1ms": coalesced_domains_within_1ms,
    "imc24-G-fig15-coalesced-faster": coalesced_faster_everywhere,
    "imc24-G-google-iack-vp": partial(vantage_point_with_most_iack, cdn="Google", expected_place="Sao Paulo"),
}  # fmt: skip


def imc24_scan_claims(tables: Tables, description: DatasetDescription) -> Rendered:
    """imc24's scan claims beside ours; ``tables``: scan_connections and scan_truth; ``description``: the scan's
    (``read_description(db, "scan")``)."""
    emulated = description.kind == "emulated-scan"
    table = claims_table("imc24", paper_claims("imc24_scan"), CLAIMS, tables, decide=not emulated)
    if emulated:
        table = table.with_columns(
            explanation=pl.when(pl.col("explanation") == "")
            .then(pl.lit(EMULATED))
            .otherwise(pl.lit(EMULATED + " ") + pl.col("explanation")),
        )
    return claims_rendered(table, description)
