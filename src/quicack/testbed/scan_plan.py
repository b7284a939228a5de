"""What an emulated scan does, from its configuration: sites, domains, measurements, load and store delay per step.

Pure planning (no processes, no namespaces), so that it can be checked without root. The configuration is the
``scan_testbed:`` section of a config file (schema: ``workflow/schemas/testbed_scan.schema.yaml``).

**Emulated time.** Every measurement has an emulated start time (UTC): a top-list measurement at
``toplist.time`` on each of ``toplist.days``; the Cloudflare-like series one measurement per emulated hour
``cloudflare_series.day`` 00:00 … 23:00. That time *is* the measurement folder's name (``date -Ins`` format,
``2024-08-07T06:00:00,000000000+00:00``) and the ``emulated_time`` column of ``truth.csv``; the wall-clock time of
the recording is kept beside it (``wall_clock_start_unix_s``) and is what the capture's packet times and the
scanner's CSV times are. Measurements run one after another in emulated-time order, one vantage point at a time.

**Day and night.** A vantage point's local hour (UTC + ``utc_offset_h``) gives its activity
``a = night_activity + (1 − night_activity) · (1 − cos(2π (h − 4) / 24)) / 2`` (lowest at 04:00, highest at 16:00).
Busy domains are warmed in the PoP's certificate cache right before a measurement by real connections from the
vantage point's users namespace: a domain with peak warm probability ``p`` is warmed with probability ``p · a``.
The certificate store's delay follows the same curve at the store's own offset:
``night_ms + (day_ms − night_ms) · a``.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Any

import yaml

SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "testbed_scan.schema.yaml"
CDN_FRONTEND = "cdn"  # site kind of the aioquic certificate-caching frontend; other kinds are native servers
# What an unmodified server's first datagrams are for the scanner (ALPN h3 only, as QScanner): quic-go and ngtcp2
# answer ACK + ServerHello in one datagram; quinn-server speaks only hq-interop and refuses h3 with a
# CONNECTION_CLOSE before any ServerHello (a QUIC host without HTTP/3).
NATIVE_EXPECTED_CLASS = {"quic-go": "coalesced", "ngtcp2": "coalesced", "quinn": "no_sh"}


@dataclass(frozen=True)
class Site:
    name: str
    kind: str  # "cdn" | "quic-go" | "ngtcp2" | "quinn"
    cdn: str
    asn: int
    prefix: IPv4Network
    addresses: tuple[IPv4Address, ...]
    iata: str
    padded: bool
    cache_ttl_s: float
    store_rtt_ms: float

    @property
    def sends_instant_ack(self) -> bool:
        return self.kind == CDN_FRONTEND


@dataclass(frozen=True)
class VantagePoint:
    name: str
    iata: str
    utc_offset_h: float


@dataclass(frozen=True)
class Domain:
    sni: str
    prefix: IPv4Network  # the CDN prefix it resolves into; the site behind it depends on the vantage point
    address: IPv4Address
    warm_probability: float  # at peak activity
    unavailable: bool = False  # the store has no certificate for it: instant ACK, then the connection is closed


@dataclass(frozen=True)
class Measurement:
    kind: str  # "toplist" | "cloudflare_series"
    emulated_time: dt.datetime  # UTC
    domains: tuple[Domain, ...]  # scanner input order; a domain may repeat

    @property
    def folder_name(self) -> str:
        """The authors' ``date -Ins`` folder name, for the emulated time."""
        return self.emulated_time.strftime("%Y-%m-%dT%H:%M:%S,000000000+00:00")


@dataclass(frozen=True)
class ScanPlan:
    dataset: str
    out: Path
    seed: int
    scanner: dict[str, Any]
    vantage_points: tuple[VantagePoint, ...]
    sites: tuple[Site, ...]
    routes: dict[str, dict[str, float]]  # vp -> site -> RTT ms (the sites the VP's routes lead to)
    store: dict[str, Any]
    night_activity: float
    measurements: tuple[Measurement, ...]

    def site(self, name: str) -> Site:
        return next(s for s in self.sites if s.name == name)

    def site_for(self, vp: str, prefix: IPv4Network) -> Site:
        """The site that `prefix` leads to from `vp` (anycast: one per VP)."""
        return next(self.site(name) for name in self.routes[vp] if self.site(name).prefix == prefix)

    def activity(self, when: dt.datetime, utc_offset_h: float) -> float:
        hour = (when.hour + when.minute / 60 + utc_offset_h) % 24
        return self.night_activity + (1 - self.night_activity) * (1 - math.cos(2 * math.pi * (hour - 4) / 24)) / 2

    def store_delay_ms(self, when: dt.datetime) -> float:
        a = self.activity(when, float(self.store.get("utc_offset_h", 0)))
        return (
            float(self.store["delay_ms_night"])
            + (float(self.store["delay_ms_day"]) - float(self.store["delay_ms_night"])) * a
        )

    def warmed(self, m: Measurement, vp: VantagePoint, rng: random.Random) -> list[Domain]:
        """The domains the users of `vp` load right before measurement `m` (each once, input order)."""
        a = self.activity(m.emulated_time, vp.utc_offset_h)
        seen: dict[str, Domain] = {}
        for d in m.domains:
            cached_at_pop = self.site_for(vp.name, d.prefix).kind == CDN_FRONTEND
            if d.sni not in seen and d.warm_probability > 0 and not d.unavailable and cached_at_pop:
                seen[d.sni] = d
        return [d for d in seen.values() if rng.random() < d.warm_probability * a]


def load_config(path: Path) -> dict[str, Any]:
    """The ``scan_testbed`` section of `path`, validated against the schema."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    section = data.get("scan_testbed") if isinstance(data, dict) else None
    if section is None:
        raise ValueError(f"{path}: no scan_testbed section")
    return validate_section(section)


def validate_section(section: dict[str, Any]) -> dict[str, Any]:
    """`section` checked against workflow/schemas/testbed_scan.schema.yaml (raises jsonschema.ValidationError)."""
    import jsonschema

    jsonschema.validate(section, yaml.safe_load(SCHEMA.read_text(encoding="utf-8")))
    return section


def _sites(cfg: dict[str, Any]) -> tuple[Site, ...]:
    sites = []
    for name, s in cfg["sites"].items():
        prefix = IPv4Network(s["prefix"])
        hosts = prefix.hosts()
        addresses = tuple(next(hosts) for _ in range(int(s.get("addresses", 1))))
        sites.append(Site(
            name=name, kind=s["kind"], cdn=s["cdn"], asn=int(s["asn"]), prefix=prefix, addresses=addresses,
            iata=s.get("iata", ""), padded=bool(s.get("padded", False)),
            cache_ttl_s=float(s.get("cache_ttl_s", cfg.get("cache_ttl_s", 3.0))),
            store_rtt_ms=float(s.get("store_rtt_ms", 0.0)),
        ))  # fmt: skip
    return tuple(sites)


def _apportion(shares: dict[str, float], total: int) -> list[str]:
    """`total` CDN labels in proportion to `shares` (largest remainder), so that every CDN with a share > 0 of a
    small top list gets its domains — a random draw per domain can leave one out."""
    weight = sum(shares.values())
    exact = {cdn: total * share / weight for cdn, share in shares.items()}
    counts = {cdn: int(x) for cdn, x in exact.items()}
    by_remainder = sorted(exact, key=lambda c: exact[c] - counts[c], reverse=True)
    for cdn in by_remainder[: total - sum(counts.values())]:
        counts[cdn] += 1
    return [cdn for cdn, n in counts.items() for _ in range(n)]


def _toplist(cfg: dict[str, Any], sites: tuple[Site, ...], rng: random.Random) -> list[Domain]:
    """`domains` names over the CDNs by share (in random rank order); address within the CDN's prefix; Zipf
    popularity by rank."""
    top = cfg["toplist"]
    by_cdn: dict[str, Site] = {}
    for s in sites:
        by_cdn.setdefault(s.cdn, s)
    labels = _apportion({cdn: float(x) for cdn, x in top["cdn_shares"].items()}, int(top["domains"]))
    rng.shuffle(labels)
    domains = []
    for rank, cdn in enumerate(labels, start=1):
        site = by_cdn[cdn]
        warm = float(top["top_warm_probability"]) * rank ** -float(top["zipf_s"])
        sni = f"www.site{rank:04d}.{cdn.lower()}.test"
        domains.append(Domain(sni, site.prefix, site.addresses[rank % len(site.addresses)], warm))
    return domains


def _series(cfg: dict[str, Any], sites: tuple[Site, ...]) -> list[Domain]:
    series = cfg["cloudflare_series"]
    prefix = IPv4Network(series["prefix"])
    address = next(s for s in sites if s.prefix == prefix).addresses[0]  # all sent to one address, as the authors
    unavailable = set(series.get("unavailable", []))
    domains = [
        Domain(sni, prefix, address, float(series.get("warm_probability", {}).get(sni, 0.0)), sni in unavailable)
        for sni in series["once"]
    ]
    for sni in series["repeated"]["names"]:
        domains += [Domain(sni, prefix, address, 0.0)] * int(series["repeated"]["count"])
    return domains


def plan(cfg: dict[str, Any]) -> ScanPlan:
    rng = random.Random(int(cfg.get("seed", 1)))
    sites = _sites(cfg)
    vps = tuple(
        VantagePoint(name, v["iata"], float(v.get("utc_offset_h", 0))) for name, v in cfg["vantage_points"].items()
    )
    measurements: list[Measurement] = []
    top = cfg.get("toplist")
    if top:
        domains = tuple(_toplist(cfg, sites, rng))
        hh, mm = (int(x) for x in top.get("time", "06:00").split(":"))
        for day in top["days"]:
            when = dt.datetime.fromisoformat(day).replace(hour=hh, minute=mm, tzinfo=dt.UTC)
            measurements.append(Measurement("toplist", when, domains))
    series = cfg.get("cloudflare_series")
    if series:
        domains = tuple(_series(cfg, sites))
        start = dt.datetime.fromisoformat(series["day"]).replace(tzinfo=dt.UTC)
        for h in range(int(series.get("hours", 24))):
            measurements.append(Measurement("cloudflare_series", start + dt.timedelta(hours=h), domains))
    measurements.sort(key=lambda m: m.emulated_time)
    return ScanPlan(
        dataset=cfg["dataset"],
        out=Path(cfg["out"]),
        seed=int(cfg.get("seed", 1)),
        scanner=cfg["scanner"],
        vantage_points=vps,
        sites=sites,
        routes={vp: {site: float(rtt) for site, rtt in r.items()} for vp, r in cfg["routes"].items()},
        store=cfg["store"],
        night_activity=float(cfg.get("night_activity", 0.1)),
        measurements=tuple(measurements),
    )


def check(p: ScanPlan) -> None:
    """Every VP reaches every prefix that a measurement uses through exactly one site."""
    prefixes = {d.prefix for m in p.measurements for d in m.domains}
    for vp in p.vantage_points:
        if vp.name not in p.routes:
            raise ValueError(f"no routes for vantage point {vp.name}")
        for prefix in prefixes:
            serving = [n for n in p.routes[vp.name] if p.site(n).prefix == prefix]
            if len(serving) != 1:
                raise ValueError(f"{vp.name}: {prefix} must lead to exactly one site, not {serving}")
