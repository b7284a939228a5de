"""An aioquic receiver whose ACK policy is set from outside: ACK ratio, ACK delay and the reaction to reordering.

``AckPolicyConnection`` is a subclass of aioquic's ``QuicConnection`` (aioquic 1.7), not a copy of it. aioquic
itself acknowledges 1 ms (``K_GRANULARITY``) after the first unacknowledged ack-eliciting packet of a packet
number space (``QuicPacketSpace.ack_at``), with no packet threshold and no immediate ACK on reordering; it writes
an ACK frame into the application data space only once ``ack_at`` is due. The subclass leaves that machinery as it
is and only moves ``ack_at`` of the application data space after each received datagram:

* **ACK ratio N** (``ack_ratio``): an ACK as soon as N ack-eliciting packets arrived since the previous ACK;
* **ACK delay d** (``ack_delay_ms``, or ``ack_delay_rtt_fraction`` × smoothed RTT): otherwise an ACK d after the
  first ack-eliciting packet not yet acknowledged;
* **reordering** (ackfreq22 §5.6, Table 4): ``D`` — the default of RFC 9000 §13.2.1: an ACK without delay when an
  ack-eliciting packet arrives out of order (its packet number is below the largest received, or packets are
  missing between the largest received and it); ``NR`` — no immediate ACK on reordering, N and d only; ``3A`` — on
  reordering, AR 1 for the next k = 3 ack-eliciting packets, the out-of-order one included (ackfreq22: "reverting
  to an AR of 1 for the next k = 3 packets"; "a total of r = reordering_threshold ACKs after reordering is
  detected"; Eq. 5 counts k ACKs per loss cluster, so D is k = 1). Loss shows as reordering to a receiver: the
  packet after a lost one arrives with a gap.

Every ACK sent restarts the count and the timer. Initial and Handshake ACKs keep aioquic's schedule.

Each ACK frame sent is logged as a qlog event ``quicack:ack_sent`` beside aioquic's ``transport:packet_sent``,
with the ``reason`` — ``packet_threshold`` (N reached), ``delay_timer`` (d expired first), ``reordering`` (D / 3A),
``other`` (Initial/Handshake ACKs, or an application ACK aioquic scheduled itself) — the carrying packet's number and
space, the ack-eliciting and all packets received since the previous ACK, the largest acknowledged packet and the
ACK Delay. The policy itself is logged once as ``quicack:ack_policy``. quicack's qlog reader puts the reason on the
ACK's ``frames`` row (``ack_reason``, ``ack_eliciting_since_previous_ack``).

A fixed d above 25 ms is also advertised as the ``max_ack_delay`` transport parameter (RFC 9000 §18.2: the peer
includes it in its PTO); with an RTT fraction the advertised value stays aioquic's 25 ms, and a sender counts the
excess into its RTT samples (it caps the ACK Delay it subtracts at max_ack_delay).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from aioquic import tls
from aioquic.buffer import Buffer
from aioquic.quic.connection import NetworkAddress, QuicConnection, QuicReceiveContext
from aioquic.quic.packet import pull_quic_transport_parameters, push_quic_transport_parameters
from aioquic.quic.packet_builder import QuicPacketBuilder
from aioquic.quic.recovery import QuicPacketSpace

# Reordering policies of ackfreq22 §5.6 and how many ack-eliciting packets after a reordering get their own ACK.
REORDERING_DEFAULT = "D"
REORDERING_NO_REACTION = "NR"
REORDERING_THREE_ACKS = "3A"
IMMEDIATE_ACKS_AFTER_REORDERING = {REORDERING_DEFAULT: 1, REORDERING_NO_REACTION: 0, REORDERING_THREE_ACKS: 3}

# Why an ACK was sent (the ``reason`` of ``quicack:ack_sent`` and of frames.ack_reason).
PACKET_THRESHOLD = "packet_threshold"
DELAY_TIMER = "delay_timer"
REORDERING = "reordering"
OTHER = "other"
ACK_REASONS = (PACKET_THRESHOLD, DELAY_TIMER, REORDERING, OTHER)

ACK_SENT_EVENT = ("quicack", "ack_sent")
ACK_POLICY_EVENT = ("quicack", "ack_policy")

# RFC 9000 §18.2 default, and what aioquic 1.7 advertises.
DEFAULT_MAX_ACK_DELAY_MS = 25
_QLOG_SPACE = {tls.Epoch.INITIAL: "initial", tls.Epoch.HANDSHAKE: "handshake", tls.Epoch.ONE_RTT: "application_data"}


@dataclass(frozen=True)
class AckPolicy:
    """A receiver's ACK policy. Defaults: RFC 9000's recommendation (AR 2, 25 ms, immediate ACK on reordering).

    Neither ``ack_delay_ms`` nor ``ack_delay_rtt_fraction`` = the ACK delay is the receiver implementation's own
    rule, not set by the testbed (ngtcp2's; quicack.testbed.receiver_ack_control); this receiver needs one."""

    ack_ratio: int = 2
    ack_delay_ms: float | None = DEFAULT_MAX_ACK_DELAY_MS
    ack_delay_rtt_fraction: float | None = None
    reordering: str = REORDERING_DEFAULT

    def __post_init__(self) -> None:
        if self.ack_ratio < 1:
            raise ValueError(f"ACK ratio must be at least 1, got {self.ack_ratio}")
        if self.ack_delay_ms is not None and self.ack_delay_rtt_fraction is not None:
            raise ValueError("give at most one of ack_delay_ms and ack_delay_rtt_fraction")
        if self.ack_delay_ms is not None and self.ack_delay_ms < 0:
            raise ValueError(f"ACK delay must not be negative, got {self.ack_delay_ms} ms")
        if self.ack_delay_rtt_fraction is not None and self.ack_delay_rtt_fraction <= 0:
            raise ValueError(f"ACK delay RTT fraction must be positive, got {self.ack_delay_rtt_fraction}")
        if self.reordering not in IMMEDIATE_ACKS_AFTER_REORDERING:
            raise ValueError(f"reordering policy must be one of {', '.join(IMMEDIATE_ACKS_AFTER_REORDERING)}, "
                             f"got {self.reordering!r}")  # fmt: skip

    @property
    def sets_ack_delay(self) -> bool:
        """Whether the policy sets the ACK delay (else the receiver implementation keeps its own)."""
        return self.ack_delay_ms is not None or self.ack_delay_rtt_fraction is not None

    @property
    def advertised_max_ack_delay_ms(self) -> int:
        """The max_ack_delay transport parameter: aioquic's 25 ms, or a larger fixed d (whole ms, rounded up)."""
        if self.ack_delay_ms is None:
            return DEFAULT_MAX_ACK_DELAY_MS
        return max(DEFAULT_MAX_ACK_DELAY_MS, -int(-self.ack_delay_ms // 1))


class AckPolicyConnection(QuicConnection):
    """aioquic's QuicConnection acknowledging application data by ``ack_policy`` (see the module docstring)."""

    def __init__(self, *, ack_policy: AckPolicy, **kwargs: Any) -> None:
        if not ack_policy.sets_ack_delay:
            raise ValueError("the aioquic receiver needs an ACK delay (ack_delay_ms or ack_delay_rtt_fraction)")
        self._ack_policy = ack_policy
        super().__init__(**kwargs)
        self._eliciting_since_ack = 0  # ack-eliciting application packets received since the previous ACK
        self._packets_since_ack = 0  # all application packets received since then
        self._immediate_acks_left = 0  # 3A: packets that still get an ACK each after a reordering
        self._pending_ack_reason: str | None = None  # why ack_at of the application space is set, if we set it
        self._application_payloads: list[bool] = []  # is_ack_eliciting of each application packet of a datagram
        if self._quic_logger is not None:
            self._quic_logger.log_event(
                category=ACK_POLICY_EVENT[0], event=ACK_POLICY_EVENT[1],
                data=asdict(ack_policy) | {"max_ack_delay": ack_policy.advertised_max_ack_delay_ms},
            )  # fmt: skip

    # -- receiving: where the policy decides ---------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: NetworkAddress, now: float) -> None:
        space = self._application_space()
        largest_before = space.largest_received_packet if space is not None else -1
        self._application_payloads = []
        super().receive_datagram(data, addr, now)
        space = self._application_space()
        if space is None or not self._application_payloads:
            return
        # A 1-RTT packet has a short header, which ends its datagram: at most one per datagram (0-RTT, which a
        # client never receives, is the only way to more).
        for is_ack_eliciting in self._application_payloads:
            self._on_application_packet(space, is_ack_eliciting, largest_before, now)
            largest_before = space.largest_received_packet

    def _payload_received(
        self, context: QuicReceiveContext, plain: bytes, crypto_frame_required: bool = False
    ) -> tuple[bool, bool]:
        is_ack_eliciting, is_probing = super()._payload_received(context, plain, crypto_frame_required)
        if context.epoch in (tls.Epoch.ONE_RTT, tls.Epoch.ZERO_RTT):
            self._application_payloads.append(is_ack_eliciting)
        return is_ack_eliciting, is_probing

    def _on_application_packet(
        self, space: QuicPacketSpace, is_ack_eliciting: bool, largest_before: int, now: float
    ) -> None:
        self._packets_since_ack += 1
        if not is_ack_eliciting:
            return
        self._eliciting_since_ack += 1
        largest = space.largest_received_packet
        # RFC 9000 §13.2.1: below the largest received (it did not become the largest), or above it with packets
        # missing in between. The space's first packet has no order to break (aioquic numbers the packets of all
        # spaces from one counter, so a 1-RTT space starts above 0).
        out_of_order = largest_before >= 0 and (largest == largest_before or largest > largest_before + 1)
        if out_of_order:
            immediate = IMMEDIATE_ACKS_AFTER_REORDERING[self._ack_policy.reordering]
            if immediate:
                self._immediate_acks_left = immediate
        if self._immediate_acks_left > 0:
            self._immediate_acks_left -= 1
            self._ack_now(space, now, REORDERING)
        elif self._eliciting_since_ack >= self._ack_policy.ack_ratio:
            self._ack_now(space, now, PACKET_THRESHOLD)
        elif self._pending_ack_reason is None:
            # aioquic set ack_at to now + 1 ms for this packet: the policy's timer replaces it.
            space.ack_at = now + self._ack_delay_s()
            self._pending_ack_reason = DELAY_TIMER

    def _ack_now(self, space: QuicPacketSpace, now: float, reason: str) -> None:
        space.ack_at = now
        self._pending_ack_reason = reason

    def _ack_delay_s(self) -> float:
        policy = self._ack_policy
        if policy.ack_delay_ms is not None:
            return policy.ack_delay_ms / 1000.0
        loss = self._loss
        rtt = loss._rtt_smoothed if loss._rtt_initialized else self._configuration.initial_rtt
        assert policy.ack_delay_rtt_fraction is not None  # __init__ required one of the two
        return policy.ack_delay_rtt_fraction * rtt

    def _application_space(self) -> QuicPacketSpace | None:
        spaces = self.__dict__.get("_spaces")  # created when the connection starts
        return spaces[tls.Epoch.ONE_RTT] if spaces else None

    # -- sending: log why --------------------------------------------------------------------------------------------

    def _write_ack_frame(self, builder: QuicPacketBuilder, space: QuicPacketSpace, now: float) -> None:
        packet_number = builder.packet_number
        largest_acked = space.largest_received_packet
        ack_delay_s = now - space.largest_received_time if space.largest_received_time is not None else None
        super()._write_ack_frame(builder, space, now)
        if space is self._application_space():
            reason = self._pending_ack_reason or OTHER
            eliciting, received = self._eliciting_since_ack, self._packets_since_ack
            self._eliciting_since_ack = self._packets_since_ack = 0
            self._pending_ack_reason = None
            epoch = tls.Epoch.ONE_RTT
        else:
            reason, eliciting, received = OTHER, None, None
            epoch = next(e for e, s in self._spaces.items() if s is space)
        if self._quic_logger is not None:
            self._quic_logger.log_event(
                category=ACK_SENT_EVENT[0],
                event=ACK_SENT_EVENT[1],
                data={
                    "reason": reason,
                    "packet_number": packet_number,
                    "packet_number_space": _QLOG_SPACE[epoch],
                    "acked_packets": eliciting,  # ack-eliciting packets received since the previous ACK
                    "received_packets": received,  # all packets received since the previous ACK
                    "largest_acked": largest_acked,
                    "ack_delay": None if ack_delay_s is None else round(ack_delay_s * 1000.0, 3),  # ms
                },
            )

    # -- the advertised max_ack_delay --------------------------------------------------------------------------------

    def _serialize_transport_parameters(self) -> bytes:
        encoded = super()._serialize_transport_parameters()
        advertised = self._ack_policy.advertised_max_ack_delay_ms
        if advertised == DEFAULT_MAX_ACK_DELAY_MS:
            return encoded
        parameters = pull_quic_transport_parameters(Buffer(data=encoded))
        parameters.max_ack_delay = advertised
        buf = Buffer(capacity=len(encoded) + 8)
        push_quic_transport_parameters(buf, parameters)
        if self._quic_logger is not None:
            self._quic_logger.log_event(
                category="transport", event="parameters_set", data={"owner": "local", "max_ack_delay": advertised}
            )
        return buf.data
