"""ackfreq22's model of the client's (receiver's) traffic, Eq. (1)–(5) of §5.4, as pure functions.

    (1) T_client = V_bm + V_crypt
    (2) T_client = (A_total + A_loss) · S_bm + V_crypt
    (3) A_total = Serv_p / AR + (1 − α) · A_del
    (4) A_total = P_init / AR_init + (Serv_p − P_init) / AR_sub + (1 − α) · A_del      (two-phase policy, e.g. Chrome)
    (5) A_loss = k · L

Serv_p: packets the server sent; A_del: ACKs sent because the ACK-delay timer fired; α: the mean fraction of AR
packets that such a timer ACK covers (the paper finds 0.5 for quicly; ``fit_alpha`` measures it); S_bm: the size
of an ACK; V_crypt: the client's handshake bytes; k: packets acknowledged immediately after a reordering, L: loss
clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import polars as pl

# Eq. (2), (3) and (5) compute numbers, or polars expressions of columns (quicack.metrics.client_traffic).
Quantity = TypeVar("Quantity", float, "pl.Expr")

PAPER_ALPHA = 0.5
CHROME_INITIAL_PACKETS = 100  # Chrome: AR 2 for the first 100 packets, then AR 10


def acks_in_sequence(
    server_packets: Quantity,
    ack_ratio: Quantity,
    timer_acks: Quantity | float = 0.0,
    alpha: Quantity | float = PAPER_ALPHA,
) -> Quantity:
    """Eq. (3): ACKs for in-sequence packets. Every timer ACK covers only α·AR packets, so it adds (1 − α) of an
    ACK beyond the Serv_p / AR the ratio alone would send."""
    return server_packets / ack_ratio + (1.0 - alpha) * timer_acks


def acks_in_sequence_two_phase(
    server_packets: float,
    initial_ack_ratio: float,
    later_ack_ratio: float,
    timer_acks: float = 0.0,
    alpha: float = PAPER_ALPHA,
    initial_packets: float = CHROME_INITIAL_PACKETS,
) -> float:
    """Eq. (4): a policy with one AR for the first ``initial_packets`` and another after them."""
    first = min(server_packets, initial_packets)
    return first / initial_ack_ratio + (server_packets - first) / later_ack_ratio + (1.0 - alpha) * timer_acks


def acks_after_loss(loss_clusters: Quantity, packets_acked_immediately: Quantity) -> Quantity:
    """Eq. (5): A_loss = k · L."""
    return packets_acked_immediately * loss_clusters


def client_bytes(acks: Quantity, loss_acks: Quantity, ack_bytes: Quantity, handshake_bytes: Quantity) -> Quantity:
    """Eq. (2): T_client = (A_total + A_loss) · S_bm + V_crypt (Eq. (1) with V_bm = all ACK bytes)."""
    return (acks + loss_acks) * ack_bytes + handshake_bytes


def fit_alpha(packets_per_timer_ack: Sequence[float], ack_ratio: float) -> float | None:
    """α as the paper defines it: the mean fraction of AR that a timer ACK acknowledges (None without timer ACKs)."""
    if not packets_per_timer_ack:
        return None
    return sum(packets_per_timer_ack) / len(packets_per_timer_ack) / ack_ratio
