"""Three network namespaces — client, router, server — joined by two veth pairs.

::

    [client ns]  c0 ──veth── rl  [router ns]  rr ──veth── s0  [server ns]
     198.18.0.2            198.18.0.1      198.19.0.1            198.19.0.2

All names derive from a per-job prefix so that several runs can exist side by side; the veths are created
directly inside their namespaces, so nothing of a run ever lives in the root namespace. Deleting the
namespaces (after the processes in them are gone) removes the veths, their qdiscs and the router's iptables
rules with them. Addresses come from 198.18.0.0/15 (RFC 2544 benchmarking range) only.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from typing import Protocol

BENCH_NET = IPv4Network("198.18.0.0/15")
NS_PREFIX = "qack"  # every namespace this package creates starts with this
_PREFIX_RE = re.compile(r"^[a-z0-9]{1,8}$")


@dataclass(frozen=True)
class Topology:
    """Names and addresses of one run's namespaces."""

    job: str  # short unique id, [a-z0-9]{1,8}

    @property
    def client_ns(self) -> str:
        return f"{NS_PREFIX}-{self.job}-c"

    @property
    def router_ns(self) -> str:
        return f"{NS_PREFIX}-{self.job}-r"

    @property
    def server_ns(self) -> str:
        return f"{NS_PREFIX}-{self.job}-s"

    @property
    def namespaces(self) -> tuple[str, str, str]:
        return (self.client_ns, self.router_ns, self.server_ns)

    # Interface names live inside their namespaces, so short fixed names are unique per job already.
    client_if: str = "c0"
    router_left_if: str = "rl"  # faces the client: QIR's "left" node
    router_right_if: str = "rr"  # faces the server: QIR's "right" node
    server_if: str = "s0"

    client_addr: IPv4Address = IPv4Address("198.18.0.2")
    router_left_addr: IPv4Address = IPv4Address("198.18.0.1")
    router_right_addr: IPv4Address = IPv4Address("198.19.0.1")
    server_addr: IPv4Address = IPv4Address("198.19.0.2")
    prefixlen: int = 24

    def __post_init__(self) -> None:
        if not _PREFIX_RE.match(self.job):
            raise ValueError(f"job id must match {_PREFIX_RE.pattern}: {self.job!r}")
        for a in (self.client_addr, self.router_left_addr, self.router_right_addr, self.server_addr):
            if a not in BENCH_NET:
                raise ValueError(f"{a} is outside {BENCH_NET}")


def new_job_id() -> str:
    return secrets.token_hex(4)


def require_root() -> None:
    if os.geteuid() != 0:
        raise PermissionError(
            "the quicack testbed needs root (network namespaces, iptables NFQUEUE, tc, tcpdump); "
            "run it as root or in a privileged container"
        )


def run_checked(argv: list[str]) -> None:
    """Run `argv`; fail with its stderr when it fails (setting up namespaces, links and rules: quicack.testbed.scan_net
    too)."""
    proc = subprocess.run(argv, capture_output=True, text=True, encoding="utf-8")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")


def ns_argv(ns: str, argv: list[str]) -> list[str]:
    """`argv` run inside namespace `ns`."""
    return ["ip", "netns", "exec", ns, *argv]


def list_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, encoding="utf-8").stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def create(topo: Topology) -> None:
    """Create namespaces, veths, addresses, routes; switch off offloads. Caller must call `destroy`."""
    for ns in topo.namespaces:
        run_checked(["ip", "netns", "add", ns])
    run_checked([
        "ip", "link", "add", topo.client_if, "netns", topo.client_ns, "type", "veth",
        "peer", "name", topo.router_left_if, "netns", topo.router_ns,
    ])  # fmt: skip
    run_checked([
        "ip", "link", "add", topo.server_if, "netns", topo.server_ns, "type", "veth",
        "peer", "name", topo.router_right_if, "netns", topo.router_ns,
    ])  # fmt: skip
    plen = topo.prefixlen
    ifaces = [
        (topo.client_ns, topo.client_if, topo.client_addr),
        (topo.router_ns, topo.router_left_if, topo.router_left_addr),
        (topo.router_ns, topo.router_right_if, topo.router_right_addr),
        (topo.server_ns, topo.server_if, topo.server_addr),
    ]
    for ns in topo.namespaces:
        # IPv6 off: no router solicitations or MLD reports in the captures.
        run_checked(ns_argv(ns, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]))
        run_checked(ns_argv(ns, ["ip", "link", "set", "lo", "up"]))
    for ns, dev, addr in ifaces:
        run_checked(ns_argv(ns, ["ip", "addr", "add", f"{addr}/{plen}", "dev", dev]))
        # One datagram per frame in the captures and at the NFQUEUE: no segmentation/aggregation offloads.
        run_checked(ns_argv(ns, ["ethtool", "-K", dev, "tx-udp-segmentation", "off", "gso", "off", "tso", "off",
                          "gro", "off"]))  # fmt: skip
        run_checked(ns_argv(ns, ["ip", "link", "set", dev, "up"]))
    run_checked(ns_argv(topo.router_ns, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]))
    run_checked(ns_argv(topo.client_ns, ["ip", "route", "add", "default", "via", str(topo.router_left_addr)]))
    run_checked(ns_argv(topo.server_ns, ["ip", "route", "add", "default", "via", str(topo.router_right_addr)]))
    # Static neighbours: no ARP exchange delays the first datagram of a run.
    _neigh(topo, topo.client_ns, topo.client_if, topo.router_left_addr, topo.router_ns, topo.router_left_if)
    _neigh(topo, topo.router_ns, topo.router_left_if, topo.client_addr, topo.client_ns, topo.client_if)
    _neigh(topo, topo.router_ns, topo.router_right_if, topo.server_addr, topo.server_ns, topo.server_if)
    _neigh(topo, topo.server_ns, topo.server_if, topo.router_right_addr, topo.router_ns, topo.router_right_if)


def link_address(ns: str, dev: str) -> str:
    """The MAC address of interface `dev` in namespace `ns` (for static neighbour entries)."""
    argv = ns_argv(ns, ["cat", f"/sys/class/net/{dev}/address"])
    out = subprocess.run(argv, capture_output=True, text=True, encoding="utf-8")
    return out.stdout.strip()


def _neigh(topo: Topology, ns: str, dev: str, addr: IPv4Address, peer_ns: str, peer_dev: str) -> None:
    mac = link_address(peer_ns, peer_dev)
    run_checked(ns_argv(ns, ["ip", "neigh", "replace", str(addr), "lladdr", mac, "dev", dev, "nud", "permanent"]))


def quickack_route(topo: Topology) -> None:
    """Linux TCP in the client namespace acknowledges every segment at once (route attribute ``quickack``, Linux 3.11+):
    ACK ratio 1 instead of the kernel's delayed ACKs."""
    run_checked(ns_argv(topo.client_ns, ["ip", "route", "change", "default", "via", str(topo.router_left_addr),
                                  "dev", topo.client_if, "quickack", "1"]))  # fmt: skip


def confine_client(topo: Topology, port: int) -> None:
    """Only the client's UDP flow to the server's ``port`` leaves the client namespace; every other packet the client
    sends out is refused inside it (TCP with a reset, anything else with ICMP port unreachable), so it never reaches
    the emulated link or the captures. For clients that reach out by themselves (the browsers)."""
    out = ["iptables", "-w", "-A", "OUTPUT", "-o", topo.client_if]
    run_checked(
        ns_argv(topo.client_ns, [*out, "-p", "udp", "-d", str(topo.server_addr), "--dport", str(port), "-j", "ACCEPT"])
    )
    run_checked(ns_argv(topo.client_ns, [*out, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"]))
    run_checked(ns_argv(topo.client_ns, [*out, "-j", "REJECT"]))


def pids_in(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, encoding="utf-8").stdout
    return [int(p) for p in out.split() if p.isdigit()]


class Namespaced(Protocol):
    """A topology of namespaces: a run's (Topology) or a scan's (quicack.testbed.scan_net.ScanTopology)."""

    @property
    def namespaces(self) -> Sequence[str]: ...


def destroy(topo: Namespaced) -> list[str]:
    """Kill what still runs inside the topology's namespaces, then delete them. Returns problems (empty if clean)."""
    problems: list[str] = []
    existing = set(list_namespaces())
    for ns in topo.namespaces:
        if ns not in existing:
            continue
        for pid in pids_in(ns):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        proc = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True, encoding="utf-8")
        if proc.returncode != 0:
            problems.append(f"ip netns del {ns}: {proc.stderr.strip()}")
    return problems
