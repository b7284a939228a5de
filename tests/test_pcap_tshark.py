"""Agreement with tshark, the reference dissector, on every real capture of the test data.

For every QUIC packet tshark decrypts we compare: packet number space and number, the packet's size, the frame type
sequence, the lengths of STREAM, CRYPTO and PADDING frames, and each ACK's delay (tshark gives the raw field; we give
milliseconds, scaled by the sender's ack_delay_exponent). Every capture compares at least one packet, and exactly as
many as we decrypt except where tshark 4.0 cannot (EXPECTED_PARTIAL names each such capture and its count).
tshark 4.0 cannot decode some things we do; where it cannot, the test checks ours instead of skipping silently:
  - ACK_FREQUENCY / IMMEDIATE_ACK: where tshark stops at a frame it does not know, its list must be a prefix of
    ours. (tshark 4.0 reads the draft -01..-03 forms: on quinn's -04 frames it decodes ACK_FREQUENCY with a
    flags byte in place of the reordering threshold and skips IMMEDIATE_ACK 0x1f as an unknown one-byte frame;
    see test_pcap_ackfreq.py.)
  - UDP GSO super-datagrams on loopback: tshark sees one undecryptable packet; we split and decrypt.
  - a Retry that the client answers with the same ClientHello (aioquic before 1.0, tests/data/foreign): tshark 4.0
    takes the repeated CRYPTO data for a retransmission and decrypts nothing after the Retry: the comparison runs
    tshark again on the capture cut just after the Retry, where the repeated ClientHello is the first.
  - a reserved (greasing) version's Initial: tshark reads it as version 1; we do not read it (test_pcap_versions.py).
tshark 4.0 ignores the draft era's `QUIC_`-prefixed keylog labels (aioquic up to 0.9.7 writes only those): it is
given the same secrets under the NSS labels.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import polars as pl
import pytest
from test_pcap_support import Capture, decode, find_captures

from quicack.pcap.capture_file import TlsKeylogSecrets, read_udp
from quicack.pcap.frames import FRAME_NAMES
from quicack.pcap.versions import quic_version

TSHARK = shutil.which("tshark")
EDITCAP = shutil.which("editcap")  # same Wireshark package as tshark
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (the reference dissector)")
CAPTURES = [c for c in find_captures() if c.keylogs or c.path.name.endswith(".pcapng")]
# Captures where tshark 4.0 decrypts only part of what we do, and how many packets it does decrypt:
#  - ngtcp2 sends UDP GSO super-datagrams on loopback; tshark takes each for one packet and decrypts none of it:
#    these are the packets of the ordinary datagrams (of 508 and 35 we decrypt).
#  - the pcapng copy with a Decryption Secrets Block of aioquic_v2_chacha_retry.pcap (compared completely, 58 of
#    58): editcap and tshark 4.0 cannot write it, so it is not cut after its Retry; 4 packets up to the client's
#    repeated ClientHello.
EXPECTED_PARTIAL = {
    "pcap/ngtcp2_keyupdate_gso.pcap.gz": 66,
    "pcap/ngtcp2_version_negotiation.pcap.gz": 20,
    "pcap/aioquic_v2_dsb.pcapng": 4,
}
UNCUT_AFTER_RETRY = {"pcap/aioquic_v2_dsb.pcapng"}
EXTENSION_FRAMES = {"ack_frequency", "immediate_ack"}  # tshark 4.0 does not know them


class _Duplicates(list):
    """tshark's JSON repeats keys (one "quic" per coalesced packet); keep them all."""


def _keep_duplicates(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            if not isinstance(out[key], _Duplicates):
                out[key] = _Duplicates([out[key]])
            out[key].append(value)
        else:
            out[key] = value
    return out


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _keylog_text(capture: Capture) -> str:
    """The capture's secrets under the NSS labels: its keylog files, or its pcapng Decryption Secrets Blocks."""
    text = "".join(p.read_text(encoding="utf-8") for p in capture.keylogs)
    if not text:
        text = "".join(item.text for item in read_udp(capture.path) if isinstance(item, TlsKeylogSecrets))
    return re.sub(r"(?m)^QUIC_", "", text)


@functools.cache
def tshark_output(capture: Capture, after_retry: bool = False) -> str:
    """tshark's JSON for a capture, decrypted with the capture's secrets. `after_retry`: of the capture with every
    record up to its Retry cut away (editcap, written as pcap), so that tshark 4.0 takes the client's repeated
    ClientHello after a Retry for the first one and decrypts the connection (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        keylog = Path(tmp) / "keys.log"
        keylog.write_text(_keylog_text(capture), encoding="utf-8")
        path = capture.path
        if after_retry:
            path = Path(tmp) / "after_retry.pcap"
            last = _retry_record_number(capture)
            subprocess.run(
                [EDITCAP, "-F", "pcap", str(capture.path), str(path), f"1-{last}"], check=True, capture_output=True
            )
        result = subprocess.run(
            [TSHARK, "-r", str(path), "-o", f"tls.keylog_file:{keylog}", "-T", "json", "-Y", "quic"],
            capture_output=True,
            text=True,
            check=True,
            encoding="utf-8",
        )
    return result.stdout


def _retry_record_number(capture: Capture) -> int:
    """The capture record number (tshark's frame.number) of the capture's first Retry."""
    for record in json.loads(tshark_output(capture), object_pairs_hook=_keep_duplicates):
        layers = record["_source"]["layers"]
        for quic in _as_list(layers.get("quic")):
            v2 = quic.get("quic.version") == "0x6b3343cf"
            long_type = quic.get("quic.long.packet_type_v2" if v2 else "quic.long.packet_type")
            if long_type == ("0" if v2 else "3"):
                return int(layers["frame"]["frame.number"])
    raise AssertionError(f"{capture.name}: no Retry")


def tshark_packets(capture: Capture, after_retry: bool = False) -> tuple[list[dict], list[int]]:
    """One dict per QUIC packet tshark decrypted (ports, space, number, size, frame names, raw ACK delays, and the
    length fields of STREAM, CRYPTO and PADDING frames), and the ack_delay_exponent transport parameters it saw."""
    text = tshark_output(capture, after_retry)
    records = json.loads(text, object_pairs_hook=_keep_duplicates)
    packets = []
    for record in records:
        layers = record["_source"]["layers"]
        udp = _as_list(layers["udp"])[0]
        srcport, dstport = int(udp["udp.srcport"]), int(udp["udp.dstport"])
        for quic in _as_list(layers.get("quic")):
            short = quic.get("quic.short")
            header = short if isinstance(short, dict) else quic
            if "quic.packet_number" not in header or "quic.frame" not in quic:
                continue  # not decrypted by tshark
            if "quic.version" in quic and not quic_version(int(quic["quic.version"], 16)).supported:
                # tshark reads a reserved version (ngtcp2's greasing probe 0x1a2a3a4a) as version 1; we do not read
                # it and say so (test_pcap_versions.py): nothing to compare.
                continue
            if short is None:
                long_type = quic.get("quic.long.packet_type", quic.get("quic.long.packet_type_v2"))
                if quic.get("quic.version") == "0x6b3343cf" and "quic.long.packet_type_v2" in quic:
                    space = {"1": "initial", "2": "appdata", "3": "handshake"}[long_type]
                else:
                    space = {"0": "initial", "1": "appdata", "2": "handshake"}[long_type]
            else:
                space = "appdata"
            frames = _as_list(quic["quic.frame"])
            packets.append(
                {
                    "record": int(layers["frame"]["frame.number"]),
                    "srcport": srcport,
                    "dstport": dstport,
                    "pn_space": space,
                    "packet_number": int(header["quic.packet_number"]),
                    "packet_bytes": int(quic["quic.packet_length"]),
                    "frame_types": [FRAME_NAMES.get(int(f["quic.frame_type"]), "unknown") for f in frames],
                    "frame_lengths": [_frame_length(f) for f in frames],
                    "ack_delays": [int(f["quic.ack.ack_delay"]) for f in frames if "quic.ack.ack_delay" in f],
                }
            )
    return packets, _ack_delay_exponents(text)


def _frame_length(frame: dict) -> int | None:
    """The length tshark gives a frame: a STREAM or CRYPTO frame's data length, a PADDING run's length in bytes
    (None for frames without one)."""
    for field in ("quic.stream.length", "quic.crypto.length", "quic.padding_length"):
        if field in frame:
            return int(frame[field])
    return None


def _lengths_tshark_gives(ours: list[int | None], theirs: list[int | None]) -> list[int | None]:
    """Our frame lengths where tshark gives one (None where it gives none)."""
    if len(ours) != len(theirs):
        return ours
    return [mine if other is not None else None for mine, other in zip(ours, theirs, strict=True)]


def _ack_delay_exponents(text: str) -> list[int]:
    """ack_delay_exponent transport parameters anywhere in tshark's output (client's and server's)."""
    marker = '"quic.parameter.ack_delay_exponent": "'
    values = []
    start = text.find(marker)
    while start >= 0:
        end = text.find('"', start + len(marker))
        values.append(int(text[start + len(marker) : end]))
        start = text.find(marker, end)
    return values


def test_the_partial_comparisons_name_captures_that_exist() -> None:
    assert set(EXPECTED_PARTIAL) | UNCUT_AFTER_RETRY <= {c.name for c in CAPTURES}


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda c: c.name)
def test_agrees_with_tshark(capture: Capture) -> None:
    decoded = decode(capture)
    theirs, exponents = tshark_packets(capture)
    assert theirs, f"{capture.name}: tshark decrypted no QUIC packet, nothing to compare"
    assert all(e == 3 for e in exponents), "fixtures use the default exponent; the comparison below assumes it"
    repeated_hello_after_retry = decoded.packets["packet_type"].eq(
        "retry"
    ).any() and "reused stream offset" in tshark_output(capture)
    if repeated_hello_after_retry and capture.name not in UNCUT_AFTER_RETRY:
        # tshark 4.0 decrypts nothing after the Retry: compare what it decrypts before it in the capture as
        # recorded, and everything after it in the capture cut just after the Retry.
        retry = _retry_record_number(capture)
        after, _ = tshark_packets(capture, after_retry=True)
        theirs = [p for p in theirs if p["record"] <= retry] + after
    # Our direction for tshark's ports: the client sent the first Initial, to the server's port (shared by all
    # connections of a capture).
    server_port = theirs[0]["dstport"]
    # A packet can be sent twice verbatim (quic-go's CONNECTION_CLOSE): keep every copy's frames.
    ours: dict[tuple, list[tuple[int, list[str], list[int | None], list[float]]]] = {}
    # frame_index restarts at 0 for each packet: that, not (direction, space, number, time), tells packets apart.
    keys = ["datagram_index", "direction", "pn_space", "packet_number"]
    per_packet = (
        decoded.frames.with_columns(
            packet=(pl.col("frame_index") == 0).cum_sum(),
            # the length tshark gives: a STREAM or CRYPTO frame's data, a PADDING run's bytes
            frame_length=pl.when(pl.col("frame_type") == "padding").then(pl.col("frame_bytes")).otherwise("length"),
        )
        .group_by("packet", maintain_order=True)
        .agg(
            *(pl.col(k).first() for k in keys),
            pl.col("frame_type"),
            pl.col("frame_length"),
            pl.col("ack_delay_ms").drop_nulls(),
        )
        .join(
            decoded.packets.filter(pl.col("decrypted")).select(*keys, "packet_bytes").unique(),
            on=keys,
            how="left",
            nulls_equal=True,
        )
    )
    assert per_packet["packet_bytes"].null_count() == 0, "every packet with frames has its size"
    for _p, _d, direction, pn_space, packet_number, types, lengths, delays, size in per_packet.iter_rows():
        ours.setdefault((direction, pn_space, packet_number), []).append((size, types, lengths, delays))
    compared = extension_prefix = 0
    for packet in theirs:
        direction = "c2s" if packet["dstport"] == server_port else "s2c"
        key = (direction, packet["pn_space"], packet["packet_number"])
        assert key in ours, f"tshark decrypted {key}, we did not"
        # Two connections in one capture share packet numbers (and a client's Initials before and after a Retry):
        # take our packet with the same size and frames.
        candidates = ours[key]
        their_delays_ms = [raw * 2**3 / 1000 for raw in packet["ack_delays"]]
        their_types, their_lengths = packet["frame_types"], packet["frame_lengths"]
        our_size, our_types, our_lengths, our_delays = next(
            (
                c
                for c in candidates
                if c[0] == packet["packet_bytes"]
                and c[1] == their_types
                and _lengths_tshark_gives(c[2], their_lengths) == their_lengths
                and c[3] == pytest.approx(their_delays_ms)
            ),
            candidates[0],
        )
        assert our_size == packet["packet_bytes"], f"{key}: {our_size} bytes, tshark {packet['packet_bytes']}"
        if their_types != our_types:
            # tshark stops at frames it does not know; ours must continue with exactly such a frame.
            assert (
                our_types[: len(their_types)] == their_types[:-1] + our_types[len(their_types) - 1 : len(their_types)]
            )
            assert our_types[len(their_types) - 1] in EXTENSION_FRAMES
            extension_prefix += 1
        else:
            assert our_delays == pytest.approx(their_delays_ms)
            # Frame sizes: wherever tshark gives a frame a length, ours is the same.
            assert _lengths_tshark_gives(our_lengths, their_lengths) == their_lengths, key
        compared += 1
    ours_decrypted = decoded.packets.filter(pl.col("decrypted") & pl.col("packet_number").is_not_null()).height
    # Everything tshark decrypts, we decrypt; we may decrypt more (GSO super-datagrams), never less.
    assert 0 < compared <= ours_decrypted
    # Where tshark 4.0 can decode everything (no GSO super-datagrams), it must decrypt exactly what we do.
    gso = decoded.ingest_issues["message"].str.contains("GSO").any()
    if gso or capture.name in UNCUT_AFTER_RETRY:
        assert compared == EXPECTED_PARTIAL[capture.name]
    else:
        assert compared == ours_decrypted
    print(
        f"{capture.name}: {compared} packets agree with tshark ({extension_prefix} via extension frames), ours "
        f"decrypted {ours_decrypted}"
    )
