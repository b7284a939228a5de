"""TLS 1.3 handshake messages inside QUIC CRYPTO streams: names, client random, cipher suite, transport parameters.

A `CryptoStream` reassembles one CRYPTO stream (one sender, one packet number space) just far enough
to find message boundaries and to read the few messages the decoder needs; message bodies it does not
need are dropped as soon as they are complete, so memory stays bounded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HANDSHAKE_MESSAGE_NAMES = {
    1: "client_hello",
    2: "server_hello",
    4: "new_session_ticket",
    5: "end_of_early_data",
    8: "encrypted_extensions",
    11: "certificate",
    13: "certificate_request",
    15: "certificate_verify",
    20: "finished",
    24: "key_update",
    25: "compressed_certificate",
}
CLIENT_HELLO, SERVER_HELLO, ENCRYPTED_EXTENSIONS = 1, 2, 8
MESSAGES_TO_PARSE = frozenset({CLIENT_HELLO, SERVER_HELLO, ENCRYPTED_EXTENSIONS})
EXTENSION_QUIC_TRANSPORT_PARAMETERS = (0x39, 0xFFA5)  # RFC 9001 and the draft codepoint
TP_ACK_DELAY_EXPONENT = 0x0A
TP_MAX_ACK_DELAY = 0x0B
TP_MIN_ACK_DELAY = (0xFF04DE1A, 0xFF04DE1B, 0xFF03DE1A)  # ack-frequency drafts
MAX_PENDING_FRAGMENTS = 64
MAX_MESSAGE_STARTS = 256
MAX_BUFFERED_BYTES = 1 << 20


@dataclass
class TransportParameters:
    ack_delay_exponent: int = 3
    max_ack_delay_ms: float = 25.0
    min_ack_delay_us: int | None = None


@dataclass
class HandshakeFacts:
    """What the decoder learns from one CRYPTO stream."""

    client_random: bytes | None = None
    cipher_suite: int | None = None
    transport_parameters: TransportParameters | None = None


@dataclass
class CryptoStream:
    """Reassembles a CRYPTO stream to find where each TLS handshake message starts."""

    facts: HandshakeFacts = field(default_factory=HandshakeFacts)
    contiguous_end: int = 0  # bytes [0, contiguous_end) have been seen
    message_start: int = 0  # offset of the message being assembled
    buffer: bytearray = field(default_factory=bytearray)  # bytes from message_start to contiguous_end
    pending: dict[int, bytes] = field(default_factory=dict)  # out-of-order fragments by offset
    starts: list[tuple[int, str]] = field(default_factory=list)
    broken: bool = False
    # QUIC drafts up to -26 encode transport parameters with 16-bit ids and lengths (versions.QuicVersion)
    legacy_transport_parameters: bool = False

    def add(self, offset: int, data: bytes) -> list[str] | None:
        """Add one CRYPTO frame; return the names of the messages starting inside it, or None."""
        end = offset + len(data)
        if not self.broken:
            if offset <= self.contiguous_end < end:
                self._extend(data[self.contiguous_end - offset :])
                self._drain_pending()
            elif offset > self.contiguous_end and len(self.pending) < MAX_PENDING_FRAGMENTS:
                self.pending[offset] = data
        names = [name for start, name in self.starts if offset <= start < end]
        return names or None

    def _drain_pending(self) -> None:
        while self.pending:
            progressed = False
            for fragment_offset in sorted(self.pending):
                fragment = self.pending[fragment_offset]
                if fragment_offset + len(fragment) <= self.contiguous_end:
                    del self.pending[fragment_offset]
                    progressed = True
                elif fragment_offset <= self.contiguous_end:
                    del self.pending[fragment_offset]
                    self._extend(fragment[self.contiguous_end - fragment_offset :])
                    progressed = True
            if not progressed:
                return

    def _extend(self, data: bytes) -> None:
        self.buffer += data
        self.contiguous_end += len(data)
        buffer = self.buffer
        while len(buffer) >= 4:
            message_type = buffer[0]
            length = int.from_bytes(buffer[1:4], "big")
            if len(self.starts) < MAX_MESSAGE_STARTS:
                if not self.starts or self.starts[-1][0] != self.message_start:
                    self.starts.append(
                        (self.message_start, HANDSHAKE_MESSAGE_NAMES.get(message_type, f"tls_{message_type}"))
                    )
            if length > MAX_BUFFERED_BYTES:
                self.broken = True  # not TLS (wrong keys would not get here, but garbage might)
                return
            if len(buffer) < 4 + length:
                return
            if message_type in MESSAGES_TO_PARSE:
                try:
                    _parse_message(
                        message_type, bytes(buffer[4 : 4 + length]), self.facts, self.legacy_transport_parameters
                    )
                except (IndexError, ValueError):
                    pass  # a malformed hello leaves the facts unknown; decryption then reports it
            del buffer[: 4 + length]
            self.message_start += 4 + length


def _parse_message(message_type: int, body: bytes, facts: HandshakeFacts, legacy: bool = False) -> None:
    if message_type == CLIENT_HELLO:
        facts.client_random = body[2:34]
        position = 34
        position += 1 + body[position]  # legacy session id
        position += 2 + int.from_bytes(body[position : position + 2], "big")  # cipher suites
        position += 1 + body[position]  # compression methods
        _parse_extensions(body, position, facts, legacy)
    elif message_type == SERVER_HELLO:
        position = 34
        position += 1 + body[position]
        facts.cipher_suite = int.from_bytes(body[position : position + 2], "big")
        position += 3
        _parse_extensions(body, position, facts, legacy)
    elif message_type == ENCRYPTED_EXTENSIONS:
        _parse_extensions(body, 0, facts, legacy)


def _parse_extensions(body: bytes, position: int, facts: HandshakeFacts, legacy: bool = False) -> None:
    if position + 2 > len(body):
        return
    end = position + 2 + int.from_bytes(body[position : position + 2], "big")
    position += 2
    while position + 4 <= end:
        extension_type = int.from_bytes(body[position : position + 2], "big")
        length = int.from_bytes(body[position + 2 : position + 4], "big")
        if extension_type in EXTENSION_QUIC_TRANSPORT_PARAMETERS:
            value = body[position + 4 : position + 4 + length]
            facts.transport_parameters = (
                parse_legacy_transport_parameters(value) if legacy else parse_transport_parameters(value)
            )
        position += 4 + length


def _varint(data: bytes, position: int) -> tuple[int, int]:
    first = data[position]
    if first < 0x40:  # one byte: most transport parameter ids and lengths
        return first, position + 1
    length = 1 << (first >> 6)
    end = position + length
    if end > len(data):
        raise ValueError("varint beyond end")
    return int.from_bytes(data[position:end], "big") & ((1 << (8 * length - 2)) - 1), end


def parse_transport_parameters(data: bytes) -> TransportParameters:
    """Read the ACK-related QUIC transport parameters (RFC 9000 §18.2); others are skipped."""
    parameters = TransportParameters()
    position = 0
    while position < len(data):
        parameter_id, position = _varint(data, position)
        length, position = _varint(data, position)
        _take_parameter(parameters, parameter_id, data[position : position + length])
        position += length
    return parameters


def parse_legacy_transport_parameters(data: bytes) -> TransportParameters:
    """The same for QUIC drafts up to -26: a 16-bit length of the list, then per parameter a 16-bit id and a 16-bit
    length (the values are varints as later)."""
    parameters = TransportParameters()
    end = min(len(data), 2 + int.from_bytes(data[:2], "big"))
    position = 2
    while position + 4 <= end:
        parameter_id = int.from_bytes(data[position : position + 2], "big")
        length = int.from_bytes(data[position + 2 : position + 4], "big")
        _take_parameter(parameters, parameter_id, data[position + 4 : position + 4 + length])
        position += 4 + length
    return parameters


def _take_parameter(parameters: TransportParameters, parameter_id: int, value_bytes: bytes) -> None:
    if not value_bytes:
        return
    if parameter_id == TP_ACK_DELAY_EXPONENT:
        parameters.ack_delay_exponent = _varint(value_bytes, 0)[0]
    elif parameter_id == TP_MAX_ACK_DELAY:
        parameters.max_ack_delay_ms = float(_varint(value_bytes, 0)[0])
    elif parameter_id in TP_MIN_ACK_DELAY:
        parameters.min_ack_delay_us = _varint(value_bytes, 0)[0]
