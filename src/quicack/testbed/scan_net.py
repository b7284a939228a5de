"""Network namespaces of an emulated Internet scan: vantage points, CDN sites and a certificate store around a router.

::

    [VP i]    v0 ──veth── vp<i> ┐                  ┌ st<k> ──veth── s0 [site k]  (service addresses on lo)
    [users i] u0 ──veth── us<i> ┤  [router ns]     ├ cs    ──veth── c0 [certificate store]
                                └ one routing table per VP: the same prefix can lead to different sites

Every vantage point (and its load generator ``users i``, which shares its routes but is not captured) has its own
routing table in the router (``ip rule iif``), so an anycast-like prefix reaches the PoP that the configuration
gives that vantage point. Delays are the router's NFQUEUE impairment (``quicack.testbed.impair``, one process with
one queue pair per VP × site path and per site × store link; netem does not exist here).

Names derive from a per-job prefix (``qscan-<job>-…``) so that scans never collide with testbed runs (``qack-``);
addresses come from 198.18.0.0/15 only: links in 198.18.64.0/18 and 198.18.200.0/24, services in 198.19.64.0/18.
Deleting the namespaces removes veths, routes, rules and iptables rules with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network

from quicack.testbed.netns import BENCH_NET, link_address, ns_argv, run_checked

SCAN_NS_PREFIX = "qscan"
_VP_NET, _USERS_NET, _SITE_NET, _STORE_NET = 64, 96, 128, 200  # third octet of each kind's first /24
_TABLE_BASE = 100


@dataclass(frozen=True)
class Leaf:
    """A namespace hanging off the router by one veth pair, on its own /24 (router .1, leaf .2)."""

    ns: str
    router_if: str
    third_octet: int
    inside_if: str = "eth0"

    @property
    def addr(self) -> IPv4Address:
        return IPv4Address(f"198.18.{self.third_octet}.2")

    @property
    def router_addr(self) -> IPv4Address:
        return IPv4Address(f"198.18.{self.third_octet}.1")


@dataclass(frozen=True)
class SitePlacement:
    """A site (CDN PoP or server) namespace and the service addresses it answers on."""

    name: str
    addresses: tuple[IPv4Address, ...]


@dataclass(frozen=True)
class PathDelay:
    """One impaired router path and its one-way delays."""

    queue: int
    in_if: str  # the "c2s" direction enters the router here …
    out_if: str  # … and leaves here; s2c is the reverse
    c2s_ms: float
    s2c_ms: float


@dataclass
class ScanTopology:
    job: str
    vantage_points: list[str]
    sites: list[SitePlacement]
    # routes[vp][prefix] = site name; rtt_ms[vp][site] = round-trip time over the router
    routes: dict[str, dict[IPv4Network, str]]
    rtt_ms: dict[str, dict[str, float]]
    store_rtt_ms: dict[str, float]  # site -> RTT of its link to the certificate store
    router_ns: str = field(init=False)

    def __post_init__(self) -> None:
        self.router_ns = f"{SCAN_NS_PREFIX}-{self.job}-r"
        for site in self.sites:
            for a in site.addresses:
                if a not in BENCH_NET:
                    raise ValueError(f"{site.name}: {a} is outside {BENCH_NET}")

    def vp(self, name: str) -> Leaf:
        i = self.vantage_points.index(name)
        return Leaf(f"{SCAN_NS_PREFIX}-{self.job}-v{i}", f"vp{i}", _VP_NET + i)

    def users(self, name: str) -> Leaf:
        i = self.vantage_points.index(name)
        return Leaf(f"{SCAN_NS_PREFIX}-{self.job}-u{i}", f"us{i}", _USERS_NET + i)

    def site(self, name: str) -> Leaf:
        k = [s.name for s in self.sites].index(name)
        return Leaf(f"{SCAN_NS_PREFIX}-{self.job}-s{k}", f"st{k}", _SITE_NET + k)

    @property
    def store(self) -> Leaf:
        return Leaf(f"{SCAN_NS_PREFIX}-{self.job}-cs", "cs", _STORE_NET)

    def leaves(self) -> list[Leaf]:
        return (
            [self.vp(v) for v in self.vantage_points]
            + [self.users(v) for v in self.vantage_points]
            + [self.site(s.name) for s in self.sites]
            + [self.store]
        )

    @property
    def namespaces(self) -> list[str]:
        return [self.router_ns] + [leaf.ns for leaf in self.leaves()]

    def path_delays(self) -> list[PathDelay]:
        """Every impaired path: VP → the sites its routes lead to, and each CDN site → the store."""
        paths: list[PathDelay] = []
        queue = 0
        for vp in self.vantage_points:
            for site in sorted(set(self.routes[vp].values())):
                half = self.rtt_ms[vp][site] / 2
                paths.append(PathDelay(queue, self.vp(vp).router_if, self.site(site).router_if, half, half))
                queue += 2
        for site, rtt in sorted(self.store_rtt_ms.items()):
            paths.append(PathDelay(queue, self.site(site).router_if, self.store.router_if, rtt / 2, rtt / 2))
            queue += 2
        return paths


def create(topo: ScanTopology) -> None:
    """Namespaces, veths, addresses, per-VP routing tables, NFQUEUE rules. Caller must call
    `quicack.testbed.netns.destroy`."""
    for ns in topo.namespaces:
        run_checked(["ip", "netns", "add", ns])
    r = topo.router_ns
    for ns in topo.namespaces:
        # IPv6 off: no router solicitations or MLD reports in the captures.
        run_checked(ns_argv(ns, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]))
        run_checked(ns_argv(ns, ["ip", "link", "set", "lo", "up"]))
    for leaf in topo.leaves():
        run_checked(["ip", "link", "add", leaf.inside_if, "netns", leaf.ns, "type", "veth",
              "peer", "name", leaf.router_if, "netns", r])  # fmt: skip
        for ns, dev, addr in ((leaf.ns, leaf.inside_if, leaf.addr), (r, leaf.router_if, leaf.router_addr)):
            run_checked(ns_argv(ns, ["ip", "addr", "add", f"{addr}/24", "dev", dev]))
            # One datagram per frame in the captures and at the NFQUEUE: no segmentation/aggregation offloads.
            run_checked(ns_argv(ns, ["ethtool", "-K", dev, "tx-udp-segmentation", "off", "gso", "off", "tso", "off",
                              "gro", "off"]))  # fmt: skip
            run_checked(ns_argv(ns, ["ip", "link", "set", dev, "up"]))
        run_checked(ns_argv(leaf.ns, ["ip", "route", "add", "default", "via", str(leaf.router_addr)]))
        # Static neighbours: no ARP exchange delays a scan's first datagrams.
        run_checked(
            ns_argv(
                leaf.ns,
                [
                    "ip",
                    "neigh",
                    "replace",
                    str(leaf.router_addr),
                    "lladdr",
                    link_address(r, leaf.router_if),
                    "dev",
                    leaf.inside_if,
                    "nud",
                    "permanent",
                ],
            )
        )
        run_checked(
            ns_argv(
                r,
                [
                    "ip",
                    "neigh",
                    "replace",
                    str(leaf.addr),
                    "lladdr",
                    link_address(leaf.ns, leaf.inside_if),
                    "dev",
                    leaf.router_if,
                    "nud",
                    "permanent",
                ],
            )
        )
    run_checked(ns_argv(r, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]))
    # Replies from an anycast address come from whichever PoP a VP's table chose: no reverse-path check.
    for key in ("all", "default", *[leaf.router_if for leaf in topo.leaves()]):
        run_checked(ns_argv(r, ["sysctl", "-q", "-w", f"net.ipv4.conf.{key}.rp_filter=0"]))
    for site in topo.sites:
        for addr in site.addresses:
            run_checked(ns_argv(topo.site(site.name).ns, ["ip", "addr", "add", f"{addr}/32", "dev", "lo"]))
    for i, vp in enumerate(topo.vantage_points):
        table = str(_TABLE_BASE + i)
        for prefix, site_name in topo.routes[vp].items():
            leaf = topo.site(site_name)
            run_checked(ns_argv(r, ["ip", "route", "add", str(prefix), "via", str(leaf.addr), "dev", leaf.router_if,
                             "table", table]))  # fmt: skip
        for leaf in (topo.vp(vp), topo.users(vp)):
            run_checked(
                ns_argv(r, ["ip", "rule", "add", "iif", leaf.router_if, "lookup", table, "pref", str(1000 + i)])
            )
    for path in topo.path_delays():
        # No --queue-bypass: without the impairment program, datagrams are dropped, not passed unimpaired.
        for in_if, out_if, queue in ((path.in_if, path.out_if, path.queue), (path.out_if, path.in_if, path.queue + 1)):
            run_checked(ns_argv(r, ["iptables", "-w", "-A", "FORWARD", "-i", in_if, "-o", out_if,
                             "-j", "NFQUEUE", "--queue-num", str(queue)]))  # fmt: skip


def impairment_argv(topo: ScanTopology, python: str, summary: str) -> list[str]:
    """The router's impairment program for every path of the topology (normal scheduling, no spinning: the
    scan's delays are tens of ms, and the machine is shared)."""
    argv = [python, "-m", "quicack.testbed.impair", "--summary", summary, "--spin-ms", "0", "--rt-priority", "0"]
    for p in topo.path_delays():
        argv += ["--pair", f"{p.queue}:{p.c2s_ms:g}:{p.s2c_ms:g}"]
    return ns_argv(topo.router_ns, argv)
