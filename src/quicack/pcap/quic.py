"""QUIC packet headers, header protection and AEAD, key phases.

Header parsing is done here (not with `aioquic.quic.packet.pull_quic_header`) because a capture needs
to survive garbage: every length is checked against the datagram and problems come back as values.
The ciphers are the `cryptography` package's (AES-GCM, ChaCha20-Poly1305, AES-ECB / ChaCha20 masks), which
is what aioquic 1.x wraps in `aioquic._crypto`; we call them directly and remove header protection with
integer operations, because that wrapper's per-packet bytearray work was a tenth of the decode loop. The key
schedule (HKDF-Extract / HKDF-Expand-Label, RFC 8446 §7.1 and RFC 9001 §5) is the standard library's `hmac`,
not `aioquic.quic.crypto`, whose import pulls in `aioquic.tls` with cryptography's X.509 and service_identity
(~80 ms of start-up for three HMAC calls per key). The tests decrypt every real capture of the test data
(and agree with tshark), which checks all of this against real peers.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .versions import VERSION_1, VERSION_2, VERSION_NEGOTIATION, QuicVersion, quic_version

# `cryptography` is imported where keys are made, not here: with the compiled engine (quicack_core) only the
# header parsing and the key schedule of this module run, and a decoder's start-up should not pay for it.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305


class CryptoError(ValueError):
    """A packet that does not decrypt (wrong keys, corrupt, too short)."""


AEAD_TAG_BYTES = 16
SAMPLE_BYTES = 16
MAX_CID_BYTES = 20

PN_SPACE_OF_TYPE = {"initial": "initial", "handshake": "handshake", "0rtt": "appdata", "1rtt": "appdata"}
AES_128_GCM_SHA256 = 0x1301
AES_256_GCM_SHA384 = 0x1302
CHACHA20_POLY1305_SHA256 = 0x1303
CIPHER_SUITES_TO_TRY = (AES_128_GCM_SHA256, AES_256_GCM_SHA384, CHACHA20_POLY1305_SHA256)
# TLS 1.3 cipher suite -> (hash, key bytes, ChaCha20 (else AES)).
CIPHER_SUITES: dict[int, tuple[str, int, bool]] = {
    AES_128_GCM_SHA256: ("sha256", 16, False),
    AES_256_GCM_SHA384: ("sha384", 32, False),
    CHACHA20_POLY1305_SHA256: ("sha256", 32, True),
}
NONCE_BYTES = 12


@dataclass(slots=True)
class LongHeader:
    """The unprotected part of a long header packet."""

    packet_type: str
    version: int
    dcid: bytes
    scid: bytes
    pn_offset: int  # where the (protected) packet number starts, relative to the packet start
    packet_bytes: int  # whole packet; for Initial/0-RTT/Handshake from the Length field
    token: bytes = b""
    supported_versions: tuple[int, ...] = ()


class HeaderError(ValueError):
    """The bytes do not form a QUIC header (or one that the datagram can hold)."""


class UnknownVersionError(HeaderError):
    """A long header of a version the decoder does not read (`versions.quic_version(version).reason` says why),
    with the connection IDs its layout gives (RFC 8999, or the drafts' before -22)."""

    def __init__(self, version: int, dcid: bytes, scid: bytes) -> None:
        super().__init__(f"{quic_version(version).label}: not supported")
        self.version, self.dcid, self.scid = version, dcid, scid


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    if position >= len(data):
        raise HeaderError("varint beyond the end of the datagram")
    first = data[position]
    length = 1 << (first >> 6)
    if position + length > len(data):
        raise HeaderError("varint beyond the end of the datagram")
    value = first & 0x3F
    for index in range(1, length):
        value = (value << 8) | data[position + index]
    return value, position + length


def parse_long_header(data: bytes, start: int, wire_end: int | None = None) -> LongHeader:
    """Parse the long header at `start` of a datagram (RFC 9000 §17.2).

    `wire_end` is the datagram's size on the wire when the capture cut it (snap length): the Length
    field is checked against it, so a cut packet keeps its true size. A draft before -22 is read with draft-22's
    layout (`QuicVersion.tentative`); where that layout does not fit, it is a version not read (UnknownVersionError,
    with the connection IDs of the drafts' own layout when those fit).
    """
    end = len(data)
    if start + 7 > end:
        raise HeaderError("long header shorter than its fixed fields")
    version = int.from_bytes(data[start + 1 : start + 5], "big")
    known = quic_version(version) if version else None
    if known is None or not known.tentative:
        return _parse_long_header(data, start, end, wire_end, version, known)
    try:
        header = _parse_long_header(data, start, end, wire_end, version, known)
    except UnknownVersionError:
        raise
    except HeaderError:
        header = None
    if header is None or len(header.dcid) > MAX_CID_BYTES or len(header.scid) > MAX_CID_BYTES:
        try:
            cids = _nibble_cids(data, start, end)
        except HeaderError:
            cids = (b"", b"")
        raise UnknownVersionError(version, *cids)
    return header


def _parse_long_header(
    data: bytes, start: int, end: int, wire_end: int | None, version: int, known: QuicVersion | None
) -> LongHeader:
    first = data[start]
    dcid_length = data[start + 5]
    position = start + 6
    if dcid_length > MAX_CID_BYTES and known is not None and known.supported:
        raise HeaderError(f"destination connection ID of {dcid_length} bytes")
    dcid = data[position : position + dcid_length]
    position += dcid_length
    if position >= end:
        raise HeaderError("long header ends inside the connection IDs")
    scid_length = data[position]
    position += 1
    scid = data[position : position + scid_length]
    position += scid_length
    if position > end:
        raise HeaderError("long header ends inside the connection IDs")
    if version == VERSION_NEGOTIATION:
        versions = tuple(int.from_bytes(data[offset : offset + 4], "big") for offset in range(position, end - 3, 4))
        return LongHeader("version_negotiation", version, dcid, scid, end - start, end - start, b"", versions)
    if known is None or not known.supported:
        raise UnknownVersionError(version, dcid, scid)
    packet_type = known.long_types[(first >> 4) & 0x03]
    if packet_type == "retry":
        if known.retry_has_odcid and position < end:  # up to draft-24: Original DCID Length, Original DCID
            position += 1 + data[position]
        token = data[position : end - known.retry_tag_bytes]
        return LongHeader("retry", version, dcid, scid, end - start, end - start, token)
    token = b""
    if packet_type == "initial":
        token_length, position = read_varint(data, position)
        token = data[position : position + token_length]
        position += token_length
    length, position = read_varint(data, position)
    if position + length > (end if wire_end is None else wire_end):
        raise HeaderError(f"Length field {length} runs past the end of the datagram")
    return LongHeader(packet_type, version, dcid, scid, position - start, position - start + length, token)


def _nibble_cids(data: bytes, start: int, end: int) -> tuple[bytes, bytes]:
    """The connection IDs of a long header of the drafts before -22: one byte holds both lengths (a nibble each,
    3 added to a non-zero one). Read only to name the connection."""
    lengths = data[start + 5]
    dcid_length = (lengths >> 4) + 3 if lengths >> 4 else 0
    scid_length = (lengths & 0x0F) + 3 if lengths & 0x0F else 0
    position = start + 6
    if position + dcid_length + scid_length > end:
        raise HeaderError("long header ends inside the connection IDs")
    return data[position : position + dcid_length], data[position + dcid_length : position + dcid_length + scid_length]


def hkdf_extract(hash_name: str, salt: bytes, key_material: bytes) -> bytes:
    return hmac.digest(salt, key_material, hash_name)


def hkdf_expand_label(hash_name: str, secret: bytes, label: bytes, length: int) -> bytes:
    """TLS 1.3 HKDF-Expand-Label with an empty context (RFC 8446 §7.1), for outputs up to one hash long."""
    full_label = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes([len(full_label)]) + full_label + b"\x00"
    digest_size = hashlib.new(hash_name).digest_size
    if length > digest_size:
        raise ValueError("HKDF-Expand-Label output longer than one hash block is never needed in QUIC")
    return hmac.digest(secret, info + b"\x01", hash_name)[:length]


def decode_packet_number(truncated: int, num_bits: int, expected: int) -> int:
    """The full packet number from its truncated form (RFC 9000 Appendix A.3)."""
    window = 1 << num_bits
    half_window = window // 2
    candidate = (expected & ~(window - 1)) | truncated
    if candidate <= expected - half_window and candidate < (1 << 62) - window:
        return candidate + window
    if candidate > expected + half_window and candidate >= window:
        return candidate - window
    return candidate


def header_protection_mask(hp_key: bytes, chacha: bool) -> Callable[[bytes], bytes]:
    """The function sample -> mask of RFC 9001 §5.4.3 (AES-ECB) or §5.4.4 (ChaCha20, the sample as counter+nonce)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if not chacha:
        return Cipher(algorithms.AES(hp_key), modes.ECB()).encryptor().update
    encryptor = Cipher(algorithms.ChaCha20(hp_key, bytes(16)), mode=None).encryptor()
    zeros = bytes(5)

    def chacha_mask(sample: bytes) -> bytes:
        encryptor.reset_nonce(sample)
        return encryptor.update(zeros)

    return chacha_mask


@dataclass(slots=True)
class Protection:
    """Packet protection of one key phase: the AEAD, the header protection mask, the secret for the next phase."""

    cipher_suite: int
    secret: bytes
    version: int
    aead: AESGCM | ChaCha20Poly1305
    iv: int
    mask: Callable[[bytes], bytes]

    @classmethod
    def from_secret(cls, cipher_suite: int, secret: bytes, version: int) -> Protection:
        """Keys from a traffic secret (RFC 9001 §5.1; RFC 9369 §3.3.2 labels); ValueError on an unknown suite."""
        if cipher_suite not in CIPHER_SUITES:
            raise ValueError(f"unknown TLS cipher suite 0x{cipher_suite:04x}")
        hash_name, key_bytes, chacha = CIPHER_SUITES[cipher_suite]
        prefix = quic_version(version).label_prefix
        key = hkdf_expand_label(hash_name, secret, prefix + b"key", key_bytes)
        iv = hkdf_expand_label(hash_name, secret, prefix + b"iv", NONCE_BYTES)
        hp = hkdf_expand_label(hash_name, secret, prefix + b"hp", key_bytes)
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

        aead = ChaCha20Poly1305(key) if chacha else AESGCM(key)
        return cls(cipher_suite, secret, version, aead, int.from_bytes(iv, "big"), header_protection_mask(hp, chacha))

    def next_phase(self) -> Protection:
        """Keys after a key update (RFC 9001 §6.1); header protection keys never change (§6)."""
        hash_name = CIPHER_SUITES[self.cipher_suite][0]
        label = quic_version(self.version).key_update_label  # "traffic upd" up to draft-23
        secret = hkdf_expand_label(hash_name, self.secret, label, len(self.secret))
        following = Protection.from_secret(self.cipher_suite, secret, self.version)
        following.mask = self.mask
        return following

    def open(self, ciphertext: bytes, header: bytes, packet_number: int) -> bytes:
        """AEAD-decrypt a payload (RFC 9001 §5.3: nonce = IV xor packet number); raises CryptoError."""
        from cryptography.exceptions import InvalidTag  # imported once; later a look-up in sys.modules

        try:
            return self.aead.decrypt((self.iv ^ packet_number).to_bytes(NONCE_BYTES, "big"), ciphertext, header)
        except InvalidTag:
            raise CryptoError("AEAD authentication failed") from None


@dataclass(slots=True)
class DecryptedPacket:
    header_bytes: int
    packet_number: int
    payload: bytes
    key_phase: int


class PacketKeys:
    """Keys of one sender in one packet number space, with the key phases of 1-RTT key updates."""

    __slots__ = ("current", "next", "previous", "key_phase", "updates")

    def __init__(self, protection: Protection) -> None:
        self.current = protection
        self.next: Protection | None = None
        self.previous: Protection | None = None
        self.key_phase = 0
        self.updates = 0

    @classmethod
    def from_secret(cls, cipher_suite: int, secret: bytes, version: int) -> PacketKeys:
        return cls(Protection.from_secret(cipher_suite, secret, version))

    def decrypt(
        self, data: bytes, start: int, pn_offset: int, packet_end: int, expected_pn: int, short: bool
    ) -> DecryptedPacket:
        """Remove header protection and decrypt one packet (data[start:packet_end]); raises CryptoError."""
        current = self.current
        header_end_max = start + pn_offset + 4
        # Also against the captured bytes: a short sample would leave a partial block in the ECB encryptor.
        if header_end_max + SAMPLE_BYTES > min(packet_end, len(data)):
            raise CryptoError("packet too short to sample for header protection")
        # Header protection (RFC 9001 §5.4): the mask from the sample 4 bytes after the packet number's start
        # unmasks the low bits of the first byte and the packet number; nothing else is copied.
        pn_start = start + pn_offset
        mask = current.mask(data[header_end_max : header_end_max + SAMPLE_BYTES])
        first = data[start] ^ (mask[0] & (0x1F if short else 0x0F))
        pn_length = (first & 0x03) + 1
        pn_end = pn_start + pn_length
        truncated_pn = int.from_bytes(data[pn_start:pn_end], "big") ^ int.from_bytes(mask[1 : 1 + pn_length], "big")
        plain_header = bytes((first,)) + data[start + 1 : pn_start] + truncated_pn.to_bytes(pn_length, "big")
        packet_number = decode_packet_number(truncated_pn, pn_length * 8, expected_pn)
        header_bytes = pn_offset + pn_length
        ciphertext = data[pn_end:packet_end]
        if short:
            key_phase = (first >> 2) & 1
            if key_phase != self.key_phase:
                return self._decrypt_other_phase(ciphertext, plain_header, packet_number, header_bytes, key_phase)
        return DecryptedPacket(
            header_bytes, packet_number, current.open(ciphertext, plain_header, packet_number), self.key_phase
        )

    def _decrypt_other_phase(
        self, ciphertext: bytes, header: bytes, packet_number: int, header_bytes: int, key_phase: int
    ) -> DecryptedPacket:
        # A reordered packet from before the last update, or the first packet after a new one.
        if self.previous is not None:
            try:
                payload = self.previous.open(ciphertext, header, packet_number)
                return DecryptedPacket(header_bytes, packet_number, payload, key_phase)
            except CryptoError:
                pass
        if self.next is None:
            self.next = self.current.next_phase()
        payload = self.next.open(ciphertext, header, packet_number)
        self.previous, self.current, self.next = self.current, self.next, None
        self.key_phase = key_phase
        self.updates += 1
        return DecryptedPacket(header_bytes, packet_number, payload, key_phase)


def initial_keys(dcid: bytes, version: int, keys_class=PacketKeys) -> tuple[PacketKeys, PacketKeys]:
    """Initial keys (client→server, server→client) from the client's Destination Connection ID (RFC 9001 §5.2) with
    the version's salt (`versions`), as `keys_class` (this module's PacketKeys or quicack_core's); ValueError for a
    version without one."""
    salt = quic_version(version).initial_salt
    if salt is None:
        raise ValueError(f"{quic_version(version).label}: no Initial salt known")
    if hasattr(keys_class, "initial"):  # quicack_core's, derived there in one call (its twin of the salts)
        return keys_class.initial(dcid, version)
    initial_secret = hkdf_extract("sha256", salt, dcid)
    client = hkdf_expand_label("sha256", initial_secret, b"client in", 32)
    server = hkdf_expand_label("sha256", initial_secret, b"server in", 32)
    return (
        keys_class.from_secret(AES_128_GCM_SHA256, client, version),
        keys_class.from_secret(AES_128_GCM_SHA256, server, version),
    )


__all__ = [
    "AEAD_TAG_BYTES",
    "CIPHER_SUITES_TO_TRY",
    "CryptoError",
    "DecryptedPacket",
    "HeaderError",
    "LongHeader",
    "PN_SPACE_OF_TYPE",
    "PacketKeys",
    "Protection",
    "VERSION_1",
    "VERSION_2",
    "initial_keys",
    "parse_long_header",
    "read_varint",
]
