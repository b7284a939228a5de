"""The configured truth of an emulated scan measurement (``truth.csv``), one row per target.

A target's expected class follows from its site and, for the certificate-caching frontends, from what the frontend
decided for that very connection (its decision log, keyed by the client's SCID = the target's scid):

* ``coalesced`` — unmodified quic-go and ngtcp2 servers always; a frontend on a cache hit;
* ``iack`` — a frontend on a cache miss (its own fetch, or one already under way for the same domain);
* ``no_sh`` — a frontend whose store has no certificate for the name: instant ACK, then CONNECTION_CLOSE; and
  quinn-server, which refuses ALPN h3 (CONNECTION_CLOSE in its first Initial, no ServerHello).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from quicack.testbed.scan_plan import CDN_FRONTEND, NATIVE_EXPECTED_CLASS, Measurement, ScanPlan, VantagePoint

TRUTH_COLUMNS = [
    "vantage_point", "measurement", "timestamp", "emulated_time", "wall_clock_start_unix_s", "targetid", "scid",
    "sni", "ip", "port", "site", "server_kind", "cdn", "asn", "pop_iata", "path_rtt_ms", "store_rtt_ms",
    "store_delay_ms", "padded", "cache_state", "warmed_by_load", "expected_class",
]  # fmt: skip


def truth_rows(
    p: ScanPlan,
    m: Measurement,
    vp: VantagePoint,
    decisions: list[dict[str, Any]],
    warmed: set[str],
    store_delay_ms: float,
    wall_start: float,
) -> list[dict[str, Any]]:
    by_scid: dict[str, dict[str, Any]] = {}
    failed: set[str] = set()
    for d in decisions:
        if "error" in d:
            failed.add(str(d["scid"]))
        elif "cache" in d:
            by_scid[str(d["scid"])] = d
    rows = []
    for i, domain in enumerate(m.domains):
        scid = f"{i:016x}"
        site = p.site_for(vp.name, domain.prefix)
        cdn_frontend = site.kind == CDN_FRONTEND
        decision = by_scid.get(scid) if cdn_frontend else None
        if not cdn_frontend:
            cache_state, expected, padded = "none", NATIVE_EXPECTED_CLASS[site.kind], False
        elif decision is None:
            cache_state, expected, padded = "no_decision", "unknown", site.padded
        else:
            cache_state = "hit" if decision["cache"] == "hit" else f"miss_{decision['fetch']}"
            padded = bool(decision["padded"])
            expected = "no_sh" if scid in failed else str(decision["expected"])
        rows.append({
            "vantage_point": vp.name,
            "measurement": m.kind,
            "timestamp": m.folder_name,
            "emulated_time": m.emulated_time.astimezone(dt.UTC).isoformat(),
            "wall_clock_start_unix_s": f"{wall_start:.6f}",
            "targetid": i,
            "scid": scid,
            "sni": domain.sni,
            "ip": str(domain.address),
            "port": 443,
            "site": site.name,
            "server_kind": "aioquic-cdn-frontend" if cdn_frontend else site.kind,
            "cdn": site.cdn,
            "asn": site.asn,
            "pop_iata": site.iata,
            "path_rtt_ms": p.routes[vp.name][site.name],
            "store_rtt_ms": site.store_rtt_ms if cdn_frontend else "",
            "store_delay_ms": f"{store_delay_ms:.3f}" if cdn_frontend else "",
            "padded": str(padded).lower(),
            "cache_state": cache_state,
            "warmed_by_load": str(domain.sni in warmed).lower(),
            "expected_class": expected,
        })  # fmt: skip
    return rows
