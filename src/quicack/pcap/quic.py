"""QUIC packet headers, header protection and AEAD via aioquic, key phases.

Header parsing is done here (not with `aioquic.quic.packet.pull_quic_header`) because a capture needs
to survive garbage: every length is checked against the datagram and problems come back as values.
All cryptography is aioquic's: `CryptoContext.setup` derives key/iv/hp from a secret,
`CryptoPair.setup_initial` derives the Initial secrets, `HeaderProtection.remove` and `AEAD.decrypt`
do the work, and `next_key_phase` derives the secrets after a key update.
"""

from __future__ import annotations

from dataclasses import dataclass

from aioquic.quic.crypto import CryptoContext, CryptoError, CryptoPair, next_key_phase
from aioquic.quic.packet import decode_packet_number
from aioquic.tls import CipherSuite

VERSION_1 = 0x00000001
VERSION_2 = 0x6B3343CF
VERSION_NEGOTIATION = 0x00000000
AEAD_TAG_BYTES = 16
SAMPLE_BYTES = 16
MAX_CID_BYTES = 20

# Long header type bits → packet type, per version (RFC 9000 §17.2, RFC 9369 §3.2).
LONG_TYPES_V1 = ("initial", "0rtt", "handshake", "retry")
LONG_TYPES_V2 = ("retry", "initial", "0rtt", "handshake")
PN_SPACE_OF_TYPE = {"initial": "initial", "handshake": "handshake", "0rtt": "appdata", "1rtt": "appdata"}
CIPHER_SUITES_TO_TRY = (
    CipherSuite.AES_128_GCM_SHA256,
    CipherSuite.AES_256_GCM_SHA384,
    CipherSuite.CHACHA20_POLY1305_SHA256,
)


def is_draft_version(version: int) -> bool:
    return version & 0xFFFFFF00 == 0xFF000000


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
    """A long header of a version we cannot parse beyond its version-independent fields (RFC 8999)."""

    def __init__(self, version: int, dcid: bytes, scid: bytes) -> None:
        super().__init__(f"unknown QUIC version 0x{version:08x}")
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
    field is checked against it, so a cut packet keeps its true size.
    """
    end = len(data)
    if start + 7 > end:
        raise HeaderError("long header shorter than its fixed fields")
    first = data[start]
    version = int.from_bytes(data[start + 1 : start + 5], "big")
    dcid_length = data[start + 5]
    position = start + 6
    if dcid_length > MAX_CID_BYTES and version in (VERSION_1, VERSION_2):
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
    if version == VERSION_2:
        packet_type = LONG_TYPES_V2[(first >> 4) & 0x03]
    elif version == VERSION_1 or is_draft_version(version):
        packet_type = LONG_TYPES_V1[(first >> 4) & 0x03]
    else:
        raise UnknownVersionError(version, dcid, scid)
    if packet_type == "retry":
        return LongHeader("retry", version, dcid, scid, end - start, end - start, data[position : end - AEAD_TAG_BYTES])
    token = b""
    if packet_type == "initial":
        token_length, position = read_varint(data, position)
        token = data[position : position + token_length]
        position += token_length
    length, position = read_varint(data, position)
    if position + length > (end if wire_end is None else wire_end):
        raise HeaderError(f"Length field {length} runs past the end of the datagram")
    return LongHeader(packet_type, version, dcid, scid, position - start, position - start + length, token)


@dataclass(slots=True)
class DecryptedPacket:
    header_bytes: int
    packet_number: int
    payload: bytes
    key_phase: int


class PacketKeys:
    """Keys of one sender in one packet number space, with the key phases of 1-RTT key updates."""

    __slots__ = ("current", "next", "previous", "key_phase", "updates")

    def __init__(self, context: CryptoContext) -> None:
        self.current = context
        self.next: CryptoContext | None = None
        self.previous: CryptoContext | None = None
        self.key_phase = 0
        self.updates = 0

    @classmethod
    def from_secret(cls, cipher_suite: int, secret: bytes, version: int) -> PacketKeys:
        context = CryptoContext()
        context.setup(cipher_suite=CipherSuite(cipher_suite), secret=secret, version=version)
        return cls(context)

    def decrypt(
        self, data: bytes, start: int, pn_offset: int, packet_end: int, expected_pn: int, short: bool
    ) -> DecryptedPacket:
        """Remove header protection and decrypt one packet (data[start:packet_end]); raises CryptoError."""
        current = self.current
        header_end_max = start + pn_offset + 4
        if header_end_max + SAMPLE_BYTES > packet_end:
            raise CryptoError("packet too short to sample for header protection")
        # Only the header and the sample go through header protection: no copy of the payload.
        plain_header, truncated_pn = current.hp.remove(data[start : header_end_max + SAMPLE_BYTES], pn_offset)
        pn_length = (plain_header[0] & 0x03) + 1
        packet_number = decode_packet_number(truncated_pn, pn_length * 8, expected_pn)
        header_bytes = pn_offset + pn_length
        ciphertext = data[start + header_bytes : packet_end]
        if short:
            key_phase = (plain_header[0] >> 2) & 1
            if key_phase != self.key_phase:
                return self._decrypt_other_phase(ciphertext, plain_header, packet_number, header_bytes, key_phase)
        return DecryptedPacket(
            header_bytes, packet_number, current.aead.decrypt(ciphertext, plain_header, packet_number), self.key_phase
        )

    def _decrypt_other_phase(
        self, ciphertext: bytes, header: bytes, packet_number: int, header_bytes: int, key_phase: int
    ) -> DecryptedPacket:
        # A reordered packet from before the last update, or the first packet after a new one.
        if self.previous is not None:
            try:
                payload = self.previous.aead.decrypt(ciphertext, header, packet_number)
                return DecryptedPacket(header_bytes, packet_number, payload, key_phase)
            except CryptoError:
                pass
        if self.next is None:
            self.next = next_key_phase(self.current)
        payload = self.next.aead.decrypt(ciphertext, header, packet_number)
        # Header protection keys never change on key update (RFC 9001 §6), so the next context keeps ours.
        self.previous, self.current, self.next = self.current, self.next, None
        self.current.hp = self.previous.hp
        self.key_phase = key_phase
        self.updates += 1
        return DecryptedPacket(header_bytes, packet_number, payload, key_phase)


def initial_keys(dcid: bytes, version: int) -> tuple[PacketKeys, PacketKeys]:
    """Initial keys (client→server, server→client) from the client's Destination Connection ID (RFC 9001 §5.2)."""
    pair = CryptoPair()
    pair.setup_initial(dcid, is_client=True, version=VERSION_2 if version == VERSION_2 else VERSION_1)
    return PacketKeys(pair.send), PacketKeys(pair.recv)


__all__ = [
    "AEAD_TAG_BYTES",
    "CIPHER_SUITES_TO_TRY",
    "CryptoError",
    "DecryptedPacket",
    "HeaderError",
    "LongHeader",
    "PN_SPACE_OF_TYPE",
    "PacketKeys",
    "VERSION_1",
    "VERSION_2",
    "initial_keys",
    "parse_long_header",
    "read_varint",
]
