"""The compiled CryptoStream (quicack_core) reads CRYPTO streams exactly as the Python one (quicack.pcap.tls).

The streams are the real ones of the test captures (client and server, Initial and Handshake spaces, several
implementations), recorded while the Python engine decodes them. Both twins get each stream as captured, in
reverse frame order, and with its messages damaged: every message's length field shortened (hellos cut inside
their fields and extensions, transport parameters cut inside a varint) and seeded byte flips. The message names
returned by every `add`, the facts learnt and the broken flag must be the same.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from test_pcap_support import DATA, find_captures

from quicack.pcap import tls
from quicack.pcap.capture_file import UdpDatagram, read_udp
from quicack.pcap.decode import CaptureDecoder
from quicack.pcap.decoder_engine import compiled_engine, python_engine
from quicack.pcap.keylog import load_keylogs

ENGINE = compiled_engine()
pytestmark = pytest.mark.skipif(ENGINE is None, reason="quicack_core is not built (install.sh builds it)")
Frames = list[tuple[int, bytes]]


class _RecordingStream(tls.CryptoStream):
    """The Python CryptoStream, keeping the frames it was given."""

    recorded: list[tuple[bool, Frames]] = []

    def __init__(self, legacy_transport_parameters: bool = False) -> None:
        super().__init__(legacy_transport_parameters=legacy_transport_parameters)
        self.frames: Frames = []
        _RecordingStream.recorded.append((legacy_transport_parameters, self.frames))

    def add(self, offset: int, data: bytes) -> list[str] | None:
        self.frames.append((offset, bytes(data)))
        return super().add(offset, data)


def _real_streams() -> list[tuple[bool, Frames]]:
    _RecordingStream.recorded = []
    engine = replace(python_engine(), crypto_stream=_RecordingStream)
    for capture in find_captures(True, DATA):
        decoder = CaptureDecoder(load_keylogs(list(capture.keylogs)), "r", "v", str(capture.path), engine)
        for item in read_udp(capture.path):
            if type(item) is UdpDatagram:
                decoder.add_datagram(item)
    return [(legacy, frames) for legacy, frames in _RecordingStream.recorded if frames]


def _facts(stream) -> tuple:
    facts = stream.facts
    parameters = facts.transport_parameters
    return (
        facts.client_random,
        facts.cipher_suite,
        None
        if parameters is None
        else (parameters.ack_delay_exponent, parameters.max_ack_delay_ms, parameters.min_ack_delay_us),
        stream.broken,
    )


def _assert_twins_agree(frames: Frames, legacy: bool = False) -> None:
    """`legacy`: the transport parameter encoding of QUIC drafts up to -26 (tests/data/foreign)."""
    python = tls.CryptoStream(legacy_transport_parameters=legacy)
    compiled = ENGINE.crypto_stream(legacy_transport_parameters=legacy)
    for offset, data in frames:
        assert python.add(offset, data) == compiled.add(offset, data)
    assert _facts(python) == _facts(compiled)


def _message_bounds(stream: bytes) -> list[tuple[int, int]]:
    """(start, length) of each whole TLS message of a reassembled stream."""
    bounds, position = [], 0
    while position + 4 <= len(stream):
        length = int.from_bytes(stream[position + 1 : position + 4], "big")
        bounds.append((position, length))
        position += 4 + length
    return bounds


def _reassembled(frames: Frames) -> bytes:
    """The stream's bytes from offset 0 as far as they are contiguous (retransmissions overlap)."""
    stream = bytearray()
    for offset, data in sorted(frames):
        if offset > len(stream):
            break
        stream[offset : offset + len(data)] = data
    return bytes(stream)


def _as_frames(stream: bytes, size: int) -> Frames:
    return [(offset, stream[offset : offset + size]) for offset in range(0, len(stream), size)]


def _damaged(stream: bytes, rng: random.Random) -> list[bytes]:
    variants = []
    for start, length in _message_bounds(stream):
        for cut in sorted({0, 1, 2, 33, 34, 35, 36, 38, 40, 41, 43, 45, 50, length // 2, max(length - 1, 0)}):
            if cut < length:  # the message declares fewer bytes than it has: every later read lands short
                variants.append(stream[: start + 1] + cut.to_bytes(3, "big") + stream[start + 4 :])
    for _ in range(20):
        damaged = bytearray(stream)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        variants.append(bytes(damaged))
    return variants


def test_twins_agree_on_real_crypto_streams() -> None:
    streams = _real_streams()
    assert len(streams) > 20
    learnt = legacy_learnt = 0
    for legacy, frames in streams:
        _assert_twins_agree(frames, legacy)
        _assert_twins_agree(frames[::-1], legacy)
        learnt += _facts(tls.CryptoStream()) != _facts(_fed(frames, legacy))
        legacy_learnt += legacy and _fed(frames, legacy).facts.transport_parameters is not None
    assert learnt > 10  # the streams carry hellos and transport parameters, not only certificates
    assert legacy_learnt >= 4  # drafts -22 … -26: both hellos' transport parameters, legacy encoding


def _fed(frames: Frames, legacy: bool = False) -> tls.CryptoStream:
    stream = tls.CryptoStream(legacy_transport_parameters=legacy)
    for offset, data in frames:
        stream.add(offset, data)
    return stream


def test_twins_agree_on_damaged_messages() -> None:
    rng = random.Random(13)
    checked = 0
    streams = _real_streams()
    for legacy, frames in streams[:40] + [stream for stream in streams if stream[0]][:10]:
        whole = _reassembled(frames)
        if not whole:
            continue
        for variant in _damaged(whole, rng):
            for size in (len(variant), 100):
                _assert_twins_agree(_as_frames(variant, size), legacy)
                checked += 1
    assert checked > 500
