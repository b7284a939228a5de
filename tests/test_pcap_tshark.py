"""Agreement with tshark, the reference dissector, on every real capture of the test data.

For every QUIC packet tshark decrypts we compare: packet number space and number, the frame type
sequence, and each ACK's delay (tshark gives the raw field; we give milliseconds, scaled by the
sender's ack_delay_exponent). tshark 4.0 cannot decode some things we do; where it cannot, the test
checks ours instead of skipping silently:
  - ACK_FREQUENCY / IMMEDIATE_ACK: where tshark stops at a frame it does not know, its list must be a prefix of
    ours. (tshark 4.0 reads the draft -01..-03 forms: on quinn's -04 frames it decodes ACK_FREQUENCY with a
    flags byte in place of the reordering threshold and skips IMMEDIATE_ACK 0x1f as an unknown one-byte frame;
    see test_pcap_ackfreq.py.)
  - UDP GSO super-datagrams on loopback: tshark sees one undecryptable packet; we split and decrypt.
  - a Retry that the client answers with the same ClientHello (aioquic before 1.0, tests/data/foreign): tshark 4.0
    takes the repeated CRYPTO data for a retransmission and decrypts nothing after the Retry; we decrypt every packet.
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

from quicack.pcap.frames import FRAME_NAMES

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (the reference dissector)")
CAPTURES = [c for c in find_captures() if c.keylogs or c.path.name.endswith(".pcapng")]
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


@functools.cache
def tshark_output(capture: Capture) -> str:
    """tshark's JSON for a capture, decrypted with the capture's keylogs."""
    with tempfile.TemporaryDirectory() as tmp:
        keylog = Path(tmp) / "keys.log"
        text = "".join(p.read_text(encoding="utf-8") for p in capture.keylogs)
        keylog.write_text(re.sub(r"(?m)^QUIC_", "", text), encoding="utf-8")
        result = subprocess.run(
            [TSHARK, "-r", str(capture.path), "-o", f"tls.keylog_file:{keylog}", "-T", "json", "-Y", "quic"],
            capture_output=True,
            text=True,
            check=True, encoding="utf-8",
        )
    return result.stdout


def tshark_packets(capture: Capture) -> tuple[list[dict], list[int]]:
    """One dict per QUIC packet tshark decrypted (ports, space, number, frame names, raw ACK delays), and the
    ack_delay_exponent transport parameters it saw."""
    text = tshark_output(capture)
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
                    "srcport": srcport,
                    "dstport": dstport,
                    "pn_space": space,
                    "packet_number": int(header["quic.packet_number"]),
                    "frame_types": [FRAME_NAMES.get(int(f["quic.frame_type"]), "unknown") for f in frames],
                    "ack_delays": [int(f["quic.ack.ack_delay"]) for f in frames if "quic.ack.ack_delay" in f],
                }
            )
    return packets, _ack_delay_exponents(text)


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


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda c: c.name)
def test_agrees_with_tshark(capture: Capture) -> None:
    decoded = decode(capture)
    theirs, exponents = tshark_packets(capture)
    assert all(e == 3 for e in exponents), "fixtures use the default exponent; the comparison below assumes it"
    # Our direction for tshark's ports: the client sent the first Initial, to the server's port (shared by all
    # connections of a capture).
    server_port = theirs[0]["dstport"]
    # A packet can be sent twice verbatim (quic-go's CONNECTION_CLOSE): keep every copy's frames.
    ours: dict[tuple, list[tuple[list[str], list[float]]]] = {}
    # frame_index restarts at 0 for each packet: that, not (direction, space, number, time), tells packets apart.
    per_packet = (
        decoded.frames.with_columns(packet=(pl.col("frame_index") == 0).cum_sum())
        .group_by("packet", maintain_order=True)
        .agg(
            pl.col("direction").first(),
            pl.col("pn_space").first(),
            pl.col("packet_number").first(),
            pl.col("time_ms").first(),
            pl.col("frame_type"),
            pl.col("ack_delay_ms").drop_nulls(),
        )
        .drop("packet")
    )
    for direction, pn_space, packet_number, _time, types, delays in per_packet.iter_rows():
        ours.setdefault((direction, pn_space, packet_number), []).append((types, delays))
    compared = extension_prefix = 0
    for packet in theirs:
        direction = "c2s" if packet["dstport"] == server_port else "s2c"
        key = (direction, packet["pn_space"], packet["packet_number"])
        assert key in ours, f"tshark decrypted {key}, we did not"
        # Two connections in one capture share packet numbers: take our packet with the same frames.
        candidates = ours[key]
        their_delays_ms = [raw * 2**3 / 1000 for raw in packet["ack_delays"]]
        our_types, our_delays = next(
            (c for c in candidates if c[0] == packet["frame_types"] and c[1] == pytest.approx(their_delays_ms)),
            candidates[0],
        )
        their_types = packet["frame_types"]
        if their_types != our_types:
            # tshark stops at frames it does not know; ours must continue with exactly such a frame.
            assert (
                our_types[: len(their_types)] == their_types[:-1] + our_types[len(their_types) - 1 : len(their_types)]
            )
            assert our_types[len(their_types) - 1] in EXTENSION_FRAMES
            extension_prefix += 1
        else:
            assert our_delays == pytest.approx(their_delays_ms)
        compared += 1
    ours_decrypted = decoded.packets.filter(pl.col("decrypted") & pl.col("packet_number").is_not_null()).height
    # Everything tshark decrypts, we decrypt; we may decrypt more (GSO super-datagrams), never less.
    assert compared <= ours_decrypted
    # Where tshark 4.0 can decode everything (QUIC v1, no GSO super-datagrams), it must decrypt exactly what we do.
    gso = decoded.ingest_issues["message"].str.contains("GSO").any()
    quic_v2 = '"quic.version": "0x6b3343cf"' in tshark_output(capture)
    repeated_hello_after_retry = (
        decoded.packets["packet_type"].eq("retry").any() and "reused stream offset" in tshark_output(capture)
    )
    if repeated_hello_after_retry:
        assert decoded.packets.filter(pl.col("pn_space").is_not_null())["decrypted"].all()
    elif not gso and not quic_v2:
        assert compared == ours_decrypted
    print(
        f"{capture.name}: {compared} packets agree with tshark ({extension_prefix} via extension frames), ours decrypted {ours_decrypted}"
    )
