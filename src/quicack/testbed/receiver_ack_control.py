"""How the testbed sets a receiver's ACK policy (``receiver_ack_policy``), per client and server.

The receiver is the downloading client; what can be set, and by whom, depends on the implementation
(ACKRATIO.md of the project's shared notes, beside the repository: ../shared/ACKRATIO.md, "Which receivers can be driven
here"):

* **aioquic client** — by itself (``RECEIVER``): quicack's ``QuicConnection`` subclass
  (quicack.testbed.ack_policy_receiver) takes AR N, a delay (fixed or an RTT fraction) and D / NR / 3A.
* **quinn client from the quinn server** — by the sender (``SENDER_ACK_FREQUENCY``): the server's
  ``TransportConfig::ack_frequency_config`` sends ACK_FREQUENCY frames (draft-ietf-quic-ack-frequency, quinn
  0.11) with Ack-Eliciting Threshold N − 1 (quinn ACKs once *more than* the threshold arrived), Request Max Ack
  Delay d and Reordering Threshold 1 (D: out-of-order packets are acknowledged at once) or 0 (NR). quinn-proto
  0.11.19 clamps the requested delay to at most max(RTT, 25 ms) and at least the client's min_ack_delay (1 ms)
  (``AckFrequencyState::candidate_max_ack_delay``), so a d above 25 ms only holds on paths whose RTT is larger.
  3A and an RTT fraction are not expressible. quinn advertises min_ack_delay always, so the client needs no flag.
* **ngtcp2 client** (Debian gtlsclient 0.12) — by itself, AR only (``RECEIVER_ACK_THRESHOLD``): ``--ack-thresh=N``.
  Its delay is its own, min(max_ack_delay 25 ms, smoothed RTT / 8) (``conn_compute_ack_delay``), recorded as
  not set (``ack_delay_ms`` null, label ``-dimpl-``); out-of-order packets are acknowledged at once
  (``pktns_commit_recv_pkt_num``), i.e. D.
* **Linux TCP** (client linux-tcp) — from outside the endpoints, AR only (``LINUX_TCP_KERNEL_OR_ROUTER``): AR 1 is
  the ``quickack`` route option, AR 2 the kernel's delayed ACKs, even N > 2 the kernel's ACKs thinned in the router
  (RFC 3449 ACK filtering, quicack.testbed.impair.TcpAckThinning) to every (N/2)-th pure ACK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quicack.testbed.ack_policy_receiver import REORDERING_DEFAULT, REORDERING_NO_REACTION, AckPolicy

RECEIVER = "receiver"  # the client's own code applies the whole policy (aioquic)
SENDER_ACK_FREQUENCY = "sender_ack_frequency"  # the server asks for it with ACK_FREQUENCY frames (quinn <-> quinn)
RECEIVER_ACK_THRESHOLD = "receiver_ack_threshold"  # the client's packet threshold only (ngtcp2 --ack-thresh)
LINUX_TCP_KERNEL_OR_ROUTER = "linux_tcp_kernel_or_router"  # quickack route, kernel default or router ACK thinning

# quinn's Reordering Threshold per reordering policy: 1 = ACK every out-of-order packet at once, 0 = never.
QUINN_REORDERING_THRESHOLD = {REORDERING_DEFAULT: 1, REORDERING_NO_REACTION: 0}
_SETTABLE = "the aioquic client (any policy), the ngtcp2 client (ack_ratio only), the quinn client from the " \
            "quinn server (ack_ratio, ack_delay_ms, reordering D or NR) and linux-tcp (ack_ratio only)"  # fmt: skip


def ack_policy_control(client: str, server: str) -> str | None:
    """Who sets the ACK policy of ``client`` downloading from ``server`` (one of the constants above), or None
    when it cannot be set."""
    if client == "aioquic":
        return RECEIVER
    if client == "ngtcp2":
        return RECEIVER_ACK_THRESHOLD
    if client == "quinn" and server == "quinn":
        return SENDER_ACK_FREQUENCY
    if client == "linux-tcp":
        return LINUX_TCP_KERNEL_OR_ROUTER
    return None


def tcp_ack_thinning(ack_ratio: int) -> int:
    """For Linux TCP: forward every K-th thinnable pure ACK in the router (impair.TcpAckThinning) so that the
    kernel's ACK ratio 2 becomes ``ack_ratio``; 0 (no thinning) for 1 (``quickack`` route) and 2."""
    if ack_ratio <= 2:
        return 0
    if ack_ratio % 2:
        raise ValueError(
            f"receiver_ack_policy: a Linux TCP ACK ratio above 2 must be even (thinning 1:2 by N/2), got {ack_ratio}"
        )
    return ack_ratio // 2


def tcp_ack_policy_record(ack_ratio: int) -> dict[str, Any]:
    """How a Linux TCP run's ACK ratio was made (run.json receiver_ack_policy)."""
    thin = tcp_ack_thinning(ack_ratio)
    mechanism = "quickack_route" if ack_ratio == 1 else "router_ack_thinning" if thin else "kernel_delayed_ack"
    return {"ack_ratio": ack_ratio, "mechanism": mechanism, "router_forwards_every_nth_pure_ack": thin or None}


def ack_policy_for(spec: Mapping[str, Any], client: str, server: str) -> AckPolicy:
    """The policy a ``receiver_ack_policy`` entry asks of ``client`` (downloading from ``server``); ValueError
    with the reason when that receiver cannot be driven so."""
    control = ack_policy_control(client, server)
    where = f"receiver_ack_policy for the {client} client (server {server})"
    if control is None:
        raise ValueError(f"{where}: its ACK policy cannot be set; settable are {_SETTABLE}")
    fraction = spec.get("ack_delay_rtt_fraction")
    delay = spec.get("ack_delay_ms")
    reordering = str(spec.get("reordering", REORDERING_DEFAULT))
    if control == LINUX_TCP_KERNEL_OR_ROUTER:
        if delay is not None or fraction is not None or reordering != REORDERING_DEFAULT:
            raise ValueError(f"{where}: for linux-tcp only ack_ratio can be set (the kernel keeps its ACK delay)")
        tcp_ack_thinning(int(spec["ack_ratio"]))  # rejects what thinning cannot do
        return AckPolicy(ack_ratio=int(spec["ack_ratio"]))  # its delay and reordering fields are not applied
    if control == RECEIVER_ACK_THRESHOLD:
        if delay is not None or fraction is not None:
            raise ValueError(f"{where}: ngtcp2's ACK delay cannot be set (it is min(25 ms, smoothed RTT / 8)); "
                             "give ack_ratio only")  # fmt: skip
        if reordering != REORDERING_DEFAULT:
            raise ValueError(f"{where}: ngtcp2 always acknowledges out-of-order packets at once (D), not {reordering}")
        return AckPolicy(ack_ratio=int(spec["ack_ratio"]), ack_delay_ms=None, reordering=REORDERING_DEFAULT)
    if control == SENDER_ACK_FREQUENCY:
        if fraction is not None:
            raise ValueError(f"{where}: ACK_FREQUENCY requests a fixed delay; use ack_delay_ms")
        if reordering not in QUINN_REORDERING_THRESHOLD:
            raise ValueError(f"{where}: reordering {reordering} is not expressible by ACK_FREQUENCY's Reordering "
                             f"Threshold; use {' or '.join(QUINN_REORDERING_THRESHOLD)}")  # fmt: skip
    if delay is None and fraction is None:
        delay = AckPolicy.ack_delay_ms
    return AckPolicy(
        ack_ratio=int(spec["ack_ratio"]),
        ack_delay_ms=None if delay is None else float(delay),
        ack_delay_rtt_fraction=None if fraction is None else float(fraction),
        reordering=reordering,
    )


def quinn_server_options(policy: AckPolicy) -> list[str]:
    """quinn-server's options that request ``policy`` from the client with ACK_FREQUENCY frames."""
    if policy.ack_delay_ms is None or policy.reordering not in QUINN_REORDERING_THRESHOLD:
        raise ValueError(f"not expressible by ACK_FREQUENCY: {policy}")
    return [
        "--ack-eliciting-threshold", str(policy.ack_ratio - 1),
        "--max-ack-delay-ms", f"{policy.ack_delay_ms:g}",
        "--reordering-threshold", str(QUINN_REORDERING_THRESHOLD[policy.reordering]),
    ]  # fmt: skip


def ngtcp2_client_options(policy: AckPolicy) -> list[str]:
    """gtlsclient's option for ``policy``'s ACK ratio (the only part of it ngtcp2 takes)."""
    return [f"--ack-thresh={policy.ack_ratio}"]
