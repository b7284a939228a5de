"""Every link type capture tools commonly write for IP traffic decodes to the same rows.

Real captures of Linux cooked headers (SLL, SLL2 over IPv6) are recorded fixtures (tests/data/pcap). The other link
types cannot be recorded on this machine (no PPP or BSD loopback interface, no VLAN switch, no ns-3): their tests
take a real recorded capture and rewrite ONLY its link-layer header — each test name says "rewritten". The IP,
UDP and QUIC bytes stay the recorded ones, so every row must equal the original's.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from quicack.pcap.capture_file import LinkRecord, open_capture, read_link_records
from quicack.pcap.decode import decode_capture
from tests.conftest import REPO

RUN = REPO / "tests/data/loopback/aioquic_quic-go/transfer_10KB/1"
ORIGINAL = RUN / "sim/loopback.pcap"  # tcpdump on lo: Ethernet (link type 1) with zero MAC addresses
KEYLOGS = [RUN / "client/keys.log", RUN / "server/keys.log"]
PCAP = REPO / "tests/data/pcap"

LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_PPP, LINKTYPE_PPP_HDLC = 0, 1, 9, 50
LINKTYPE_RAW, LINKTYPE_C_HDLC, LINKTYPE_LOOP, LINKTYPE_IPV4 = 101, 104, 108, 228


def ip_packets() -> list[tuple[int, bytes]]:
    """(time_ns, IP packet) of every record of the recorded capture (its Ethernet header removed)."""
    with open_capture(ORIGINAL) as stream:
        records = [r for r in read_link_records(stream) if isinstance(r, LinkRecord)]
    assert records and all(r.linktype == LINKTYPE_ETHERNET for r in records)
    return [(r.time_abs_ns, r.data[14:]) for r in records]


def write_pcap(path: Path, linktype: int, frames: list[tuple[int, bytes]]) -> Path:
    """A nanosecond pcap file: what libpcap writes, for one link type."""
    with path.open("wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, linktype))
        for time_ns, frame in frames:
            out.write(struct.pack("<IIII", time_ns // 1_000_000_000, time_ns % 1_000_000_000, len(frame), len(frame)))
            out.write(frame)
    return path


def _block(block_type: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack("<II", block_type, length) + body + struct.pack("<I", length)


def write_pcapng(path: Path, interfaces: list[int], frames: list[tuple[int, int, bytes]]) -> Path:
    """A pcapng file with one Interface Description Block per link type and (interface, time_ns, frame) packets;
    the default timestamp resolution (microseconds) as dumpcap writes it."""
    blocks = [_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))]
    blocks += [_block(0x00000001, struct.pack("<HHI", linktype, 0, 262144)) for linktype in interfaces]
    for interface, time_ns, frame in frames:
        ticks = time_ns // 1000
        header = struct.pack("<IIIII", interface, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), len(frame))
        blocks.append(_block(0x00000006, header + frame))
    path.write_bytes(b"".join(blocks))
    return path


def decoded(path: Path) -> dict[str, pl.DataFrame]:
    batches = list(decode_capture(path, KEYLOGS, run_id="r", vantage="v"))
    return {
        name: pl.concat([getattr(b, name) for b in batches])
        for name in ("datagrams", "packets", "frames", "ingest_issues")
    }


@pytest.fixture(scope="module")
def reference() -> dict[str, pl.DataFrame]:
    out = decoded(ORIGINAL)
    assert out["ingest_issues"].is_empty() and out["packets"]["decrypted"].all() and out["frames"].height > 40
    return out


def ethertype_of(ip: bytes) -> bytes:
    return b"\x08\x00" if ip[0] >> 4 == 4 else b"\x86\xdd"


REWRITES: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "ethernet_with_two_vlan_tags": (
        LINKTYPE_ETHERNET,
        lambda ip: b"\x02" * 6 + b"\x04" * 6 + b"\x88\xa8\x00\x0a" + b"\x81\x00\x00\x14" + ethertype_of(ip) + ip,
    ),
    "raw_ip": (LINKTYPE_RAW, lambda ip: ip),
    "ipv4": (LINKTYPE_IPV4, lambda ip: ip),
    "bsd_null_loopback": (LINKTYPE_NULL, lambda ip: struct.pack("<I", 2) + ip),
    "openbsd_loop": (LINKTYPE_LOOP, lambda ip: struct.pack(">I", 2) + ip),
    "ppp_as_ns3_writes_it": (LINKTYPE_PPP, lambda ip: b"\x00\x21" + ip),
    "ppp_with_address_and_control": (LINKTYPE_PPP, lambda ip: b"\xff\x03\x00\x21" + ip),
    "ppp_in_hdlc": (LINKTYPE_PPP_HDLC, lambda ip: b"\xff\x03\x00\x21" + ip),
    "ppp_compressed_protocol_field": (LINKTYPE_PPP, lambda ip: b"\x21" + ip),
    "cisco_hdlc": (LINKTYPE_C_HDLC, lambda ip: b"\x0f\x00" + ethertype_of(ip) + ip),
}


def assert_same_rows(out: dict[str, pl.DataFrame], reference: dict[str, pl.DataFrame]) -> None:
    assert out["ingest_issues"].is_empty(), out["ingest_issues"]["message"].to_list()
    for table in ("datagrams", "packets", "frames"):
        assert out[table].equals(reference[table]), table


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_rewritten_link_header_decodes_like_the_recorded_capture(name: str, tmp_path: Path, reference) -> None:
    linktype, frame_of = REWRITES[name]
    path = write_pcap(tmp_path / f"{name}.pcap", linktype, [(t, frame_of(ip)) for t, ip in ip_packets()])
    assert_same_rows(decoded(path), reference)


@pytest.mark.parametrize(
    ("capture", "keylog"),
    [("aioquic_sll.pcap", "aioquic_sll.keys.log"), ("aioquic_ipv6_sll2.pcap.zst", "aioquic_ipv6_sll2.keys.log")],
)
def test_recorded_linux_cooked_captures_decrypt(capture: str, keylog: str) -> None:
    batches = list(decode_capture(PCAP / capture, PCAP / keylog, run_id="r"))
    packets = pl.concat([b.packets for b in batches]).filter(pl.col("packet_type") != "datagram_padding")
    assert packets.height > 5 and packets["decrypted"].all()
    assert all(b.ingest_issues.is_empty() for b in batches)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is the reference dissector")
def test_rewritten_ppp_capture_tshark_agrees(tmp_path: Path, reference) -> None:
    """The PPP capture as ns-3 writes it: tshark sees as many UDP datagrams as we do."""
    path = write_pcap(tmp_path / "ppp.pcap", LINKTYPE_PPP, [(t, b"\x00\x21" + ip) for t, ip in ip_packets()])
    fields = subprocess.run(["tshark", "-r", str(path), "-Y", "udp", "-T", "fields", "-e", "udp.length"],
                            capture_output=True, text=True, check=True, encoding="utf-8").stdout.split()
    assert len(fields) == reference["datagrams"].height > 0
    assert sorted(int(f) - 8 for f in fields) == sorted(reference["datagrams"]["udp_payload_bytes"].to_list())


def test_rewritten_pcapng_with_interfaces_of_different_link_types(tmp_path: Path, reference) -> None:
    """Even records on an Ethernet interface, odd ones on a PPP interface: one connection, both decode."""
    frames = [
        (index % 2, t, (b"\0" * 12 + ethertype_of(ip) + ip) if index % 2 == 0 else b"\x00\x21" + ip)
        for index, (t, ip) in enumerate(ip_packets())
    ]
    out = decoded(write_pcapng(tmp_path / "two.pcapng", [LINKTYPE_ETHERNET, LINKTYPE_PPP], frames))
    # pcapng keeps microseconds by default: compare everything but the times.
    assert out["ingest_issues"].is_empty()
    for table in ("datagrams", "packets", "frames"):
        times = [c for c in out[table].columns if c.startswith("time")]
        assert out[table].drop(times).equals(reference[table].drop(times)), table


def test_malformed_unknown_link_type_is_one_issue_per_capture(tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "unknown.pcap", 147, [(t, ip) for t, ip in ip_packets()])  # 147: USER0
    out = decoded(path)
    assert out["datagrams"].is_empty()
    unsupported = [m for m in out["ingest_issues"]["message"].to_list() if "unsupported link type 147" in m]
    assert len(unsupported) == 1 and "[26 times]" in unsupported[0]


def test_malformed_pcapng_unknown_interface_next_to_a_known_one(tmp_path: Path, reference) -> None:
    """Records on an interface of unknown link type cost an issue row; the other interface's records decode."""
    packets = ip_packets()
    frames = [(0, t, b"\x00\x21" + ip) for t, ip in packets] + [(1, packets[0][0], b"\x99" * 40)]
    out = decoded(write_pcapng(tmp_path / "mixed.pcapng", [LINKTYPE_PPP, 147], frames))
    assert out["datagrams"].height == reference["datagrams"].height
    assert out["packets"]["decrypted"].all()
    assert any("unsupported link type 147" in m for m in out["ingest_issues"]["message"].to_list())


def test_malformed_truncated_ppp_frame_costs_one_issue_and_the_rest_decodes(tmp_path: Path, reference) -> None:
    packets = ip_packets()
    frames = [(t, b"\x00\x21" + ip) for t, ip in packets]
    frames.insert(3, (packets[2][0], b"\xff\x03"))  # address and control, no protocol field
    frames.insert(5, (packets[3][0], b"\x00\x21" + packets[3][1][:12]))  # IPv4 header cut
    out = decoded(write_pcap(tmp_path / "cut.pcap", LINKTYPE_PPP, frames))
    messages = out["ingest_issues"]["message"].to_list()
    assert any("PPP frame shorter" in m for m in messages) and any("IPv4 header truncated" in m for m in messages)
    assert out["datagrams"].height == reference["datagrams"].height
    assert out["packets"]["decrypted"].all()
