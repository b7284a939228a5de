"""Test scenarios of imc24 (§3, §4, Appendix F) and the expansion of a testbed config into run groups."""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from quicack.layout import ack_policy_label, sender_label, testcase_name
from quicack.reference import path_profile
from quicack.testbed.ack_policy_receiver import AckPolicy
from quicack.testbed.clients import H3, HQ, LINUX_TCP, TCP, takes_key_share
from quicack.testbed.clients import supported_protocols as client_protocols
from quicack.testbed.conditions import (
    HOLD_RESIDUAL_MS,
    IMPLEMENTATION_CONDITIONS,
    STACK_MACHINE,
    STACK_PAPER,
    server_hello_hold_ms,
    stack_scenario,
)
from quicack.testbed.receiver_ack_control import ack_policy_for
from quicack.testbed.server_programs import check_sender_settings, has_handshake_modes, holds_server_hello
from quicack.testbed.server_programs import supported_protocols as server_protocols


@dataclass(frozen=True)
class Scenario:
    """What a scenario fixes. The remaining first server flight is calibrated per client, mode and RTT; the
    second client flight is mapped once per client (imc24 Table 4; `run.static_client_flight`)."""

    name: str
    cert_size: str  # 'small' (1,212 B), 'large' (5,113 B) or 'xlarge' (10,226 B; quicack.testbed.certs)
    cert_delay_ms: float  # Δt
    file_name: str = "10KB"
    calibrate: str | None = None  # None | 'server_flight' | 'client_flight' | 'client_finished_flight'
    description: str = ""


# The server's stack delay is a condition of every imc24 scenario (block key `server_stack_delay`:
# quicack.testbed.conditions): `machine` (this machine's own) or `paper` (the ServerHello held so that each client
# sees imc24 §4.1's delay for it, data/reference/imc24_stack_delay.csv), or a hold in ms for every client (the embedded
# dataset's 2.9 ms). Groups under the paper's delay record `<scenario>_paper_stack` (quicack.layout.PAPER_STACK_SUFFIX).


# imc24 §4.1: "Unless specified otherwise, we do not add delays" (Δt = 0); amplification: 5,113 B and 200 ms.
SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("noloss", "small", 0.0, description="baseline handshake and transfer, no loss (imc24 §4.1)"),
        Scenario(
            "amplification", "large", 200.0,
            description="certificate exceeds the anti-amplification limit, Δt = 200 ms (imc24 §4.1, Fig. 5)",
        ),
        Scenario(
            "drop_server_flight", "small", 0.0, calibrate="server_flight",
            description="the remaining first server flight is dropped (imc24 §4.2, Fig. 6/12)",
        ),
        Scenario(
            "drop_client_flight", "small", 0.0, calibrate="client_flight",
            description="the second client flight is dropped (imc24 §4.2, Fig. 7/13, Table 4)",
        ),
        Scenario("transfer", "small", 0.0, file_name="10MB", description="bulk transfer (imc24 Appendix E, Fig. 11)"),
        Scenario(
            "handshake", "small", 0.0,
            description="QIR's handshake test case: no loss, small certificate, 10 KB (imc24 Table 3, any server)",
        ),
        # imc24 Table 2, row "above amplification limit": the two loss scenarios with the large certificate
        # (Δt = 0). Both flights are calibrated from a baseline with that certificate: the client's static mapping
        # would drop its ACKs of the amplification-limited server flight instead of its Finished flight
        # (quicack.testbed.calibrate).
        Scenario(
            "drop_server_flight_large", "large", 0.0, calibrate="server_flight",
            description="large certificate (above the amplification limit), the remaining first server flight "
            "is dropped (imc24 Table 2)",
        ),
        Scenario(
            "drop_client_flight_large", "large", 0.0, calibrate="client_finished_flight",
            description="large certificate (above the amplification limit), the client's Finished flight is "
            "dropped (imc24 Table 2)",
        ),
        # The same row for clients whose ClientHello takes two datagrams (quic-go, go-x-net): their amplification
        # limit (3 × ~2.4 kB) is above 5,113 B, so only a larger certificate puts them in that row.
        Scenario(
            "amplification_xlarge", "xlarge", 200.0,
            description=(
                "10,226 B certificate (above the amplification limit of two-datagram ClientHellos), Δt = 200 ms"
            ),
        ),
        Scenario(
            "drop_server_flight_xlarge", "xlarge", 0.0, calibrate="server_flight",
            description="10,226 B certificate, the remaining first server flight is dropped (imc24 Table 2)",
        ),
        Scenario(
            "drop_client_flight_xlarge", "xlarge", 0.0, calibrate="client_finished_flight",
            description="10,226 B certificate, the client's Finished flight is dropped (imc24 Table 2)",
        ),
        *(
            Scenario(
                f"noloss_delay_{delay:g}ms", "small", float(delay),
                description=f"no loss, small certificate, Δt = {delay:g} ms: the Δt sweep behind the measured "
                "sweet spot (imc24 Fig. 4) and Table 2's Δt vs 3·RTT columns",
            )
            for delay in (5, 20, 50, 100, 200, 400)
        ),
        Scenario(
            "ack_ratio", "small", 0.0, file_name="1MB",
            description="1 MB download for the ACK-ratio study (ackfreq22 §5.4–5.6) without added loss: set the "
            "client's receiver_ack_policy and the path",
        ),
        Scenario(
            "ack_ratio_loss", "small", 0.0, file_name="1MB",
            description="the same with random loss (set loss_up / loss_down; ackfreq22 §5.6: 1 % both ways); a "
            "scenario of its own so that its runs do not share folders with the loss-free ones",
        ),
        Scenario(
            "default_pto", "small", 1500.0,
            description="WFC with Δt = 1.5 s: the client's first PTO fires before any server datagram "
            "arrives, on its default PTO (imc24 Table 4)",
        ),
    )
}  # fmt: skip


@dataclass(frozen=True)
class RunGroup:
    """One Snakemake job: every repetition of one (client, mode, scenario, RTT, file) combination."""

    dataset: str
    server: str
    client: str
    mode: str
    scenario: str
    rtt_ms: float
    repetitions: int
    file_name: str
    app_protocol: str
    cert_size: str
    cert_delay_ms: float
    bandwidth_c2s_mbit: float | None
    bandwidth_s2c_mbit: float | None
    server_initial_rtt_ms: float | None
    timeout_s: float
    capture_snaplen: int
    compress: bool
    seed: int
    calibrate: str | None
    path_profile: str | None = None
    # Bottleneck queues (None: the testbed's default of 100 full-size packets, in bytes, each way). A path profile
    # sets the forward (s2c) queue to about one BDP in bytes and the return (c2s) queue in packets.
    queue_s2c_bytes: int | None = None
    queue_c2s_packets: int | None = None
    loss_c2s: float = 0.0  # random loss probability per datagram (seeded per run)
    loss_s2c: float = 0.0
    drop_to_client: tuple[int, ...] = ()
    drop_to_server: tuple[int, ...] = ()
    # Drop the client's Finished flight by content: its first datagram with a 1-RTT packet and the N − 1 after it
    # (quicack.testbed.calibrate; 0 = off).
    drop_to_server_finished_flight: int = 0
    captures: bool = True  # tcpdump on both router interfaces (off: qlogs only)
    server_qlog: bool = True  # keep the server's qlog (off: the client's only)
    receiver_ack_policy: AckPolicy | None = None  # the client's ACK policy (None: its implementation's default)
    server_side_capture: bool = True  # keep sim/trace_node_right (off: the client-side capture only)
    # Cuts for long transfers (quicack.testbed.reduce): frames the client did not send cut to this many bytes in
    # the client-side capture (0 = off), and the qlog events kept per endpoint (None = all).
    forward_snaplen: int = 0
    client_qlog_events: tuple[str, ...] | None = None
    server_qlog_events: tuple[str, ...] | None = None
    # The server as a sender (quicack.testbed.server_programs.SENDER_SETTINGS): its congestion controller (None = the
    # implementation's default) and whether it paces (off = bursts up to the congestion window; quiche never paces
    # with reno or cubic, quinn always paces).
    server_congestion_control: str | None = None
    server_pacing: bool = True
    # The impairment program's early wake-up (impair.py --spin-ms; None = its default 0.15 ms): it spins on a core
    # for the last part of every wait; 0 waits in select alone.
    impairment_spin_ms: float | None = None
    # Repetitions 1..kept_repetitions were recorded earlier (with the group's settings of then) and are kept as they
    # are; the recorder adds kept_repetitions + 1 .. repetitions with the drop lists those runs were calibrated with.
    kept_repetitions: int = 0
    # The server's first flight no earlier than this after its TLS got the ClientHello (quic-go; the block's
    # server_stack_delay, quicack.testbed.conditions).
    server_hello_hold_ms: float = 0.0
    # 'paper': the hold is this client's row of imc24_stack_delay.csv; None: the machine's own (hold 0) or a hold
    # set in ms for every client (the embedded dataset's _paper_stack groups).
    server_stack_delay: str | None = None
    # 'paper': client and server set as data/reference/implementation_conditions.csv gives the papers' runs, where the
    # testbed can (quicack.testbed.conditions.condition_options); None: each implementation as built.
    implementation_conditions: str | None = None
    # 'x25519': the client offers X25519 alone (quicack.testbed.clients.KEY_SHARE_CLIENTS); None = its default.
    client_key_share: str | None = None
    # With kept_repetitions: the earlier block's group whose repetitions are kept, so that a recording from scratch
    # makes them first (run.run_group), with that block's settings.
    kept_base: RunGroup | None = None
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> str:
        """Stable name of the group (used for Snakemake targets and the group marker file)."""
        return f"{self.server}_{self.client}/{self.testcase}"

    @property
    def testcase(self) -> str:
        """The group's folder name under <server>_<client>/ (quicack.layout.testcase_name)."""
        return testcase_name(self.scenario, self.mode, self.rtt_ms, self.file_name, self.app_protocol,
                             self.ack_policy_label, self.path_profile, self.sender_label)  # fmt: skip

    @property
    def sender_label(self) -> str | None:
        """The server's congestion control and pacing as the run folders name them (``ccreno-unpaced``), or None
        when both are the implementation's defaults."""
        if self.server_congestion_control is None and self.server_pacing:
            return None
        return sender_label(self.server_congestion_control, self.server_pacing)

    @property
    def ack_policy_label(self) -> str | None:
        """The receiver's ACK policy as the run folders name it (``ar10-d25ms-D``), or None for the default."""
        p = self.receiver_ack_policy
        if p is None:
            return None
        if self.client == LINUX_TCP:
            return f"ar{p.ack_ratio}"  # TCP's ACK delay and reordering reaction stay the kernel's
        return ack_policy_label(p.ack_ratio, p.ack_delay_ms, p.ack_delay_rtt_fraction, p.reordering)


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else [v]


def block_servers(cfg: dict[str, Any]) -> list[str]:
    """The servers of a (merged) config block: ``servers`` (a list) wins over ``server`` (default aioquic)."""
    if cfg.get("servers"):
        return _as_list(cfg["servers"])
    return [cfg.get("server") or "aioquic"]


def _ack_policy_specs(cfg: dict[str, Any]) -> list[dict[str, Any] | None]:
    """``receiver_ack_policy`` of a block: absent or null = the client's default; an object = one policy; a list
    = one group per policy. An object gives ``ack_ratio`` and at most one of ``ack_delay_ms`` (default 25) and
    ``ack_delay_rtt_fraction``, and ``reordering`` (D, NR or 3A; default D); what each client takes is
    quicack.testbed.receiver_ack_control's."""
    wanted = cfg.get("receiver_ack_policy")
    return [None] if wanted is None else [None if spec is None else dict(spec) for spec in _as_list(wanted)]


def _events(names: list[str] | None) -> tuple[str, ...] | None:
    return None if names is None else tuple(names)


def _path_settings(profile_name: str) -> dict[str, Any]:
    """RunGroup fields of a path profile (data/reference/path_profiles.csv): rate, RTT, loss and queues per
    direction. The profile's one-way delays are each half its RTT, as the testbed applies them."""
    profile = path_profile(profile_name)
    if profile["s2c_delay_ms"] != profile["c2s_delay_ms"]:
        raise ValueError(f"path profile {profile_name}: the testbed delays both directions by RTT / 2")
    return {
        "rtt_ms": float(profile["rtt_ms"]),
        "bandwidth_c2s_mbit": float(profile["c2s_rate_mbit"]),
        "bandwidth_s2c_mbit": float(profile["s2c_rate_mbit"]),
        "loss_c2s": float(profile["c2s_loss_percent"]) / 100,
        "loss_s2c": float(profile["s2c_loss_percent"]) / 100,
        "queue_s2c_bytes": int(profile["s2c_queue_bytes"]),
        "queue_c2s_packets": int(profile["c2s_queue_packets"]),
    }


def _implementation_conditions(cfg: dict[str, Any]) -> str | None:
    wanted = cfg.get("implementation_conditions")
    if wanted is not None and wanted not in IMPLEMENTATION_CONDITIONS:
        known = ", ".join(IMPLEMENTATION_CONDITIONS)
        raise ValueError(f"implementation_conditions: {wanted!r} (known: {known} or null)")
    return wanted


def _app_protocol(wanted: str, client: str, server: str) -> str | None:
    """'auto' = h3 where client and server both have it, else hq-interop; None if the pair cannot talk."""
    common = client_protocols(client) & server_protocols(server)
    if wanted == "auto":
        return next((protocol for protocol in (H3, HQ, TCP) if protocol in common), None)
    return wanted if wanted in common else None


def _groups_from_block(block: dict[str, Any], defaults: dict[str, Any]) -> list[RunGroup]:
    cfg = defaults | block
    if "server" in block and "servers" not in block:
        cfg.pop("servers", None)  # a block's own `server` overrides the top-level list
    out = []
    profiles = _as_list(cfg.get("path_profile"))
    rtts = [None] if cfg.get("path_profile") else _as_list(cfg["rtts_ms"])  # a profile brings its own RTT
    stacks = _as_list(cfg.get("server_stack_delay", STACK_MACHINE))
    residual_ms = float(cfg.get("server_stack_residual_ms", HOLD_RESIDUAL_MS))
    for server, client, mode, scen_name, profile_name, rtt, policy_spec, stack in itertools.product(
        block_servers(cfg), _as_list(cfg["clients"]), _as_list(cfg["modes"]), _as_list(cfg["scenarios"]),
        profiles, rtts, _ack_policy_specs(cfg), stacks,
    ):  # fmt: skip
        ack_policy = None if policy_spec is None else ack_policy_for(policy_spec, client, server)
        check_sender_settings(server, cfg.get("server_congestion_control"), bool(cfg.get("server_pacing", True)))
        scen = SCENARIOS[scen_name]
        app = _app_protocol(cfg.get("app_protocol", "auto"), client, server)
        if app is None:
            continue
        # The IACK/WFC servers (quic-go, aioquic) take the modes and Δt; another server runs as it is (mode 'none',
        # run.json null), so every configured mode collapses into one group for it.
        if not has_handshake_modes(server):
            mode = "none"
        modal = mode != "none"
        hold = server_hello_hold_ms(stack, client, residual_ms) if modal else 0.0
        if stack != STACK_MACHINE and modal and not holds_server_hello(server):
            raise ValueError(f"{scen_name}: the {server} server cannot hold its ServerHello (only quic-go's)")
        bw = cfg.get("bandwidth_mbit", 10.0)
        path = (
            _path_settings(profile_name)
            if profile_name
            else {
                "rtt_ms": float(rtt),
                "bandwidth_c2s_mbit": cfg.get("bandwidth_up_mbit", bw),
                "bandwidth_s2c_mbit": cfg.get("bandwidth_down_mbit", bw),
                "loss_c2s": float(cfg.get("loss_up", 0.0)),
                "loss_s2c": float(cfg.get("loss_down", 0.0)),
            }
        )
        out.append(
            RunGroup(
                dataset=cfg["dataset"],
                server=server,
                client=client,
                mode=mode,
                scenario=stack_scenario(scen_name, stack, _implementation_conditions(cfg)),
                repetitions=int(cfg.get("repetitions", 1)),
                file_name=cfg.get("file") or scen.file_name,
                app_protocol=app,
                cert_size=cfg.get("cert_size") or scen.cert_size,
                cert_delay_ms=(
                    float(cfg["cert_delay_ms"]) if cfg.get("cert_delay_ms") is not None else scen.cert_delay_ms
                )
                if modal
                else 0.0,
                server_initial_rtt_ms=cfg.get("server_initial_rtt_ms"),
                timeout_s=float(cfg.get("timeout_s", 30)),
                capture_snaplen=int(cfg.get("capture_snaplen", 0)),
                captures=bool(cfg.get("captures", True)),
                server_qlog=bool(cfg.get("server_qlog", True)),
                server_side_capture=bool(cfg.get("server_side_capture", True)),
                forward_snaplen=int(cfg.get("forward_snaplen", 0)),
                client_qlog_events=_events(cfg.get("client_qlog_events")),
                server_qlog_events=_events(cfg.get("server_qlog_events")),
                compress=bool(cfg.get("compress", True)),
                seed=int(cfg.get("seed", 1)),
                calibrate=scen.calibrate,
                path_profile=profile_name,
                receiver_ack_policy=ack_policy,
                server_congestion_control=cfg.get("server_congestion_control"),
                server_pacing=bool(cfg.get("server_pacing", True)),
                impairment_spin_ms=None if cfg.get("impairment_spin_ms") is None else float(cfg["impairment_spin_ms"]),
                **path,
                kept_repetitions=int(cfg.get("kept_repetitions", 0)),
                server_hello_hold_ms=hold,
                server_stack_delay=STACK_PAPER if stack == STACK_PAPER and modal else None,
                implementation_conditions=_implementation_conditions(cfg),
                # A matrix-wide setting: it applies to the clients that take it, the others keep their default.
                client_key_share=cfg.get("client_key_share") if takes_key_share(client) else None,
                # The session-sized part of a long recording the block belongs to (not a setting: no folder, no JSON).
                extra={"part": cfg["part"]} if cfg.get("part") else {},
            )
        )
        if not 0 <= out[-1].kept_repetitions < out[-1].repetitions:
            raise ValueError(f"{out[-1].key}: kept_repetitions must be below repetitions")
    return out


def expand(testbed_cfg: dict[str, Any]) -> list[RunGroup]:
    """All run groups of a ``testbed:`` config section: the main matrix plus each entry of ``extra``."""
    # A top-level `part` names the main matrix's part; the blocks name their own (none inherit it).
    defaults = {k: v for k, v in testbed_cfg.items() if k not in ("extra", "part")}
    groups = _groups_from_block({"part": testbed_cfg["part"]} if testbed_cfg.get("part") else {}, defaults)
    for block in testbed_cfg.get("extra", []) or []:
        groups += _groups_from_block(block, defaults)
    seen: dict[str, RunGroup] = {}
    for g in groups:
        if g.kept_repetitions and g.key in seen:
            # A block that adds repetitions to a group of an earlier block extends that group (same folder); the
            # earlier group comes along, so that a recording from scratch can make the kept repetitions first.
            base = seen[g.key]
            if base.repetitions != g.kept_repetitions:
                raise ValueError(f"{g.key}: kept_repetitions {g.kept_repetitions} but the earlier block records "
                                 f"{base.repetitions}")  # fmt: skip
            seen[g.key] = replace(g, kept_base=base)
        else:
            seen.setdefault(g.key, g)
    return list(seen.values())


def group_to_json(group: RunGroup) -> str:
    """The settings of one group as compact JSON: what Snakemake passes to a job, so that a job's parameters
    change only when its own group's settings do (not when another part of the config does)."""
    return json.dumps(_group_dict(group), sort_keys=True, separators=(",", ":"))


def _group_dict(group: RunGroup) -> dict[str, Any]:
    d = asdict(group)
    d.pop("extra")
    d["kept_base"] = None if group.kept_base is None else _group_dict(group.kept_base)
    for setting, default in (
        ("server_side_capture", True), ("drop_to_server_finished_flight", 0), ("queue_s2c_bytes", None),
        ("queue_c2s_packets", None), ("forward_snaplen", 0), ("client_qlog_events", None), ("server_qlog_events", None),
        ("server_congestion_control", None), ("server_pacing", True), ("kept_repetitions", 0),
        ("impairment_spin_ms", None), ("server_hello_hold_ms", 0.0), ("client_key_share", None), ("kept_base", None),
        ("server_stack_delay", None), ("implementation_conditions", None),
    ):  # fmt: skip
        if d[setting] == default:
            # Defaults are left out, so that the groups recorded before these settings existed keep their parameters.
            d.pop(setting)
    return d


def group_from_json(text: str) -> RunGroup:
    return _group_from_dict(json.loads(text))


def _group_from_dict(d: dict[str, Any]) -> RunGroup:
    if d.get("kept_base") is not None:
        d["kept_base"] = _group_from_dict(d["kept_base"])
    for k in ("drop_to_client", "drop_to_server"):
        d[k] = tuple(d.get(k) or ())
    for k in ("client_qlog_events", "server_qlog_events"):
        if d.get(k) is not None:
            d[k] = tuple(d[k])
    if d.get("receiver_ack_policy") is not None:
        d["receiver_ack_policy"] = AckPolicy(**d["receiver_ack_policy"])
    return RunGroup(**d)


def with_drops(
    group: RunGroup, to_client: tuple[int, ...], to_server: tuple[int, ...], finished_flight: int = 0
) -> RunGroup:
    return replace(
        group,
        drop_to_client=to_client,
        drop_to_server=to_server,
        drop_to_server_finished_flight=finished_flight,
        extra=dict(group.extra),
    )


def in_part(group: RunGroup, part: str | None) -> bool:
    """Whether ``group`` is recorded in ``part`` (its block's ``part``; None: every group)."""
    return part is None or group.extra.get("part") == part
