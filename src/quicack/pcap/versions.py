"""QUIC versions by number: what the capture decoder needs to read each one, or why it cannot.

One table for every version a capture may hold: QUIC version 1 (RFC 9000/9001), version 2 (RFC 9369), the IETF
drafts, implementations' private numbers and the reserved (greasing) ones. Per version: its name, the Initial salt,
the HKDF labels of packet protection and of key updates, the long header packet types, the Retry layout and the
transport parameter encoding. A version without a salt here is not decrypted: its packets become rows of
packet_type 'unknown' and the capture gets one ingest issue naming the version and saying why
(`QuicVersion.unsupported_message`).

What is decrypted is what tshark 4.0 decrypts (its `quic_draft_version`): the drafts from -22 on (the long header
of RFC 8999's invariants), mvfst's draft-based numbers, version 1 and version 2 with its provisional number; the
drafts before -22 as tshark tries them (draft-22's layout and keys), kept only where the AEAD authenticates them
(`QuicVersion.tentative`). Where
the drafts changed (draft-ietf-quic-tls and -transport change logs; tshark and aioquic agree):

    Initial salt     -22: 7fbcdb0e…, -23 … -28: c3eef712…, -29 … -32: afbfec28…, -33, -34 and v1: 38762cf7…
    key update       "traffic upd" (the TLS label) up to -23, "quic ku" from -24
    Retry            Original DCID Length + Original DCID in the packet up to -24; a 16-byte integrity tag from -25
    transport param. 16-bit ids and lengths after a 16-bit list length up to -26; varints from -27
    frames           as RFC 9000 from -22 on (HANDSHAKE_DONE exists from -25; earlier ones never send it)

`rust/quicack_core/src/keys.rs` holds the twin of the key schedule (salt and labels per version) for the compiled
engine; tests/test_pcap_versions.py checks that both give the same for every number of this table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

VERSION_NEGOTIATION = 0x00000000
VERSION_1 = 0x00000001
VERSION_2 = 0x6B3343CF
VERSION_2_PROVISIONAL = 0x709A50C4  # draft-ietf-quic-v2-01 … -04

LONG_TYPES_V1 = ("initial", "0rtt", "handshake", "retry")  # by the type bits (RFC 9000 §17.2)
LONG_TYPES_V2 = ("retry", "initial", "0rtt", "handshake")  # RFC 9369 §3.2

SALT_DRAFT_22 = bytes.fromhex("7fbcdb0e7c66bbe9193a96cd21519ebd7a02644a")
SALT_DRAFT_23 = bytes.fromhex("c3eef712c72ebb5a11a7d2432bb46365bef9f502")
SALT_DRAFT_29 = bytes.fromhex("afbfec289993d24c9e9786f19c6111e04390a899")
SALT_V1 = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")  # RFC 9001 §5.2 (and drafts -33, -34)
SALT_V2_PROVISIONAL = bytes.fromhex("a707c203a59b47184a1d62ca570406ea7ae3e5d3")
SALT_V2 = bytes.fromhex("0dede3def700a6db819381be6e269dcbf9bd2ed9")  # RFC 9369 §3.3.1

FIRST_INVARIANT_DRAFT = 22
LAST_DRAFT = 34


@dataclass(frozen=True, slots=True)
class QuicVersion:
    """How packets of one QUIC version are read (`initial_salt` None: not decrypted, `reason` says why)."""

    number: int
    name: str  # "1", "2", "draft-29", "mvfst (draft-27)", "reserved version", "Google Q046", ...
    initial_salt: bytes | None = None
    reason: str | None = None  # why packets of this version are not decrypted
    label_prefix: bytes = b"quic "  # of "key", "iv", "hp" (RFC 9001 §5.1; RFC 9369 §3.3.2: "quicv2 ")
    key_update_label: bytes = b"quic ku"
    long_types: tuple[str, str, str, str] = LONG_TYPES_V1
    retry_has_odcid: bool = False  # up to draft-24: Original DCID Length and Original DCID in the Retry
    retry_tag_bytes: int = 16  # Retry Integrity Tag (from draft-25)
    legacy_transport_parameters: bool = False  # up to draft-26: 16-bit ids and lengths
    # Read only if the keys prove it: tshark 4.0 reads every draft before -22 with draft-22's layout and salt. A
    # real draft-21 packet does not decrypt that way (its long header differs), but aioquic before 0.7 sent draft-22
    # packets under the numbers of drafts -17 … -21, and those do. The AEAD decides: a first Initial that
    # authenticates confirms the version (one issue says how it was read); one that does not makes every packet of
    # the connection unsupported (`reason`).
    tentative: bool = False

    @property
    def supported(self) -> bool:
        return self.initial_salt is not None

    @property
    def label(self) -> str:
        """How messages name it: 'QUIC draft-29 (0xff00001d)', 'QUIC version 1'."""
        if self.number in (VERSION_1, VERSION_2):
            return f"QUIC version {self.name}"
        return f"QUIC {self.name} (0x{self.number:08x})"

    def tentative_message(self) -> str:
        """The one issue of a capture whose packets of a draft before -22 were read as draft-22's."""
        return (
            f"{self.label}: read with draft-22's long header, salt and labels, as tshark 4.0 reads it, and the AEAD "
            "authenticated its packets: the sender labels draft-22 packets with this number (aioquic before 0.7 "
            "does); a real packet of this draft would not decrypt"
        )

    def unsupported_message(self, packets: int) -> str:
        """The one ingest issue of a capture holding packets of this (unsupported) version."""
        return (
            f"{self.label}: not supported ({self.reason}), {packets} packet{'s' if packets != 1 else ''} skipped "
            "(rows of packet_type 'unknown', not decrypted, no frames)"
        )


def _draft(number: int) -> QuicVersion:
    """An IETF draft version 0xff0000NN."""
    draft = number & 0xFF
    name = f"draft-{draft:02d}"
    if draft < FIRST_INVARIANT_DRAFT:
        return replace(
            _like_draft(number, name, 22, SALT_DRAFT_22), tentative=True,
            reason="its long header and keys predate draft-22 and RFC 8999's invariants, and its first Initial does "
            "not decrypt with draft-22's (as tshark 4.0 tries)",
        )  # fmt: skip
    if draft > LAST_DRAFT:
        return QuicVersion(number, name, reason="no such draft of QUIC was published (the last is draft-34)")
    salt = SALT_DRAFT_22 if draft == 22 else SALT_DRAFT_23 if draft <= 28 else SALT_DRAFT_29 if draft <= 32 else SALT_V1
    return _like_draft(number, name, draft, salt)


def _like_draft(number: int, name: str, draft: int, salt: bytes) -> QuicVersion:
    return QuicVersion(
        number, name, salt,
        key_update_label=b"traffic upd" if draft <= 23 else b"quic ku",
        retry_has_odcid=draft <= 24,
        retry_tag_bytes=0 if draft <= 24 else 16,
        legacy_transport_parameters=draft <= 26,
    )  # fmt: skip


# Versions with a name of their own (Wireshark's list of version numbers, RFC 9000 / 9369 / the v2 drafts).
_NAMED: dict[int, QuicVersion] = {
    VERSION_1: QuicVersion(VERSION_1, "1", SALT_V1),
    VERSION_2: QuicVersion(VERSION_2, "2", SALT_V2, label_prefix=b"quicv2 ", key_update_label=b"quicv2 ku",
                           long_types=LONG_TYPES_V2),
    VERSION_2_PROVISIONAL: QuicVersion(
        VERSION_2_PROVISIONAL, "version 2 draft (draft-ietf-quic-v2-01 to -04)", SALT_V2_PROVISIONAL,
        label_prefix=b"quicv2 ", key_update_label=b"quicv2 ku", long_types=LONG_TYPES_V2,
    ),  # fmt: skip
    # Facebook's mvfst: private numbers for its draft-based versions (tshark reads them as the draft named)
    0xFACEB001: _like_draft(0xFACEB001, "mvfst (draft-22)", 22, SALT_DRAFT_22),
    0xFACEB002: _like_draft(0xFACEB002, "mvfst (draft-27)", 27, SALT_DRAFT_23),
    0xFACEB00E: _like_draft(0xFACEB00E, "mvfst experimental (draft-27)", 27, SALT_DRAFT_23),
}

_GOOGLE = "Google QUIC (gQUIC), not IETF QUIC"
_PRIVATE = "a private version of that implementation, with no published keys"
# Ranges of numbers some implementations used (Wireshark's quic_version_vals), with why they are not read.
_RANGES: tuple[tuple[int, int, str, str], ...] = (
    (0x45474700, 0x454747FF, "Quant", _PRIVATE),
    (0x50435130, 0x50435131, "picoquic internal", _PRIVATE),
    (0x51303030, 0x51303939, "Google Q0", _GOOGLE),  # Q0xx, named by its last two ASCII digits
    (0x51474F00, 0x51474FFF, "quic-go private (QGO)", _PRIVATE),
    (0x54303030, 0x54303939, "Google T0", "Google QUIC with TLS (T0xx), not IETF QUIC"),
    (0x91C17000, 0x91C170FF, "quicly", _PRIVATE),
    (0xABCD0000, 0xABCD000F, "MsQuic", _PRIVATE),
    (0xFACEB003, 0xFACEB00F, "mvfst", _PRIVATE),
    (0xF123F0C0, 0xF123F0CF, "MozQuic", _PRIVATE),
)


def is_reserved(number: int) -> bool:
    """A version of the form 0x?a?a?a?a, reserved to exercise version negotiation (RFC 9000 §15)."""
    return number & 0x0F0F0F0F == 0x0A0A0A0A


@lru_cache(maxsize=512)
def quic_version(number: int) -> QuicVersion:
    """What is known of version `number` (any 32-bit value)."""
    if number in _NAMED:
        return _NAMED[number]
    if number & 0xFFFFFF00 == 0xFF000000:
        return _draft(number)
    if is_reserved(number):
        return QuicVersion(number, "reserved version", reason="greasing: reserved to force version negotiation "
                                                              "(RFC 9000 §15), no keys are defined for it")
    for low, high, name, reason in _RANGES:
        if low <= number <= high:
            if name.startswith("Google"):
                name += number.to_bytes(4, "big")[2:].decode("ascii", "replace")
            return QuicVersion(number, name, reason=reason)
    return QuicVersion(number, "unknown version", reason="no QUIC specification or implementation known to quicack "
                                                         "uses this number")


def supported_numbers() -> tuple[int, ...]:
    """Every version number the decoder decrypts (the named ones and the drafts -22 … -34)."""
    drafts = tuple(0xFF000000 + draft for draft in range(FIRST_INVARIANT_DRAFT, LAST_DRAFT + 1))
    return tuple(n for n in (*_NAMED, *drafts) if quic_version(n).supported)


__all__ = [
    "QuicVersion",
    "VERSION_1",
    "VERSION_2",
    "VERSION_NEGOTIATION",
    "is_reserved",
    "quic_version",
    "supported_numbers",
]
