"""The compiled pcap lane reads pcapng as the Python reader does (quicack_core's pcapng.rs, twin of
`quicack.pcap.pcapng`).

The reference is `capture_file.read_udp` (the Python reader). The lane is driven with no flow registered
(`lane_bridge.read_udp_through_lane`, which the scan's identify pass reads with), so every datagram, record, issue
and Decryption Secrets Block it reads comes back to Python, and the two item streams must be equal item for item
(record numbers, times, addresses, payloads, issue messages, key logs). Inputs: every pcapng of
the test data, the shared fixtures and the scan captures (plain, zstd); a pcapng of two interfaces with different
link types and one with secrets injected, both written by Wireshark's own tools from real captures; the real
pcapng re-encoded big-endian and the malformed ones (cut, bad lengths, garbage, unknown and undersized blocks),
hand-made because such files cannot be recorded.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from test_pcap_support import DATA

from quicack.pcap.capture_file import ReadIssue, TlsKeylogSecrets, UdpDatagram, read_udp
from quicack.pcap.decoder_engine import compiled_engine
from quicack.pcap.lane_bridge import open_lane, read_udp_through_lane
from quicack.reading.limits import DEFAULT_LIMITS, Limits
from tests.conftest import SAMPLE_RAW, SHARED

ENGINE = compiled_engine()
pytestmark = pytest.mark.skipif(ENGINE is None, reason="quicack_core is not built (install.sh builds it)")
ROOT = Path(__file__).resolve().parents[1]
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
REAL = DATA / "pcap" / "aioquic_v2_dsb.pcapng"  # a real aioquic run with its secrets in a Decryption Secrets Block


def _is_pcapng(path: Path) -> bool:
    from quicack.pcap.capture_file import open_capture

    try:
        with open_capture(path) as stream:
            return stream.read(4) == PCAPNG_MAGIC
    except Exception:  # noqa: BLE001 - not a capture
        return False


def _pcapng_captures() -> list[Path]:
    roots = [DATA, SHARED / "fixtures", ROOT / "data" / "scan", SAMPLE_RAW]
    names = ("*.pcapng", "*.pcap", "*.pcap.zst", "*.pcap.gz", "*.pcapng.zst", "*.pcapng.gz")
    found = {path for root in roots if root.is_dir() for name in names for path in root.rglob(name)}
    return sorted(path for path in found if _is_pcapng(path))


def _lane_items(path: Path, limits: Limits = DEFAULT_LIMITS) -> list:
    """What the lane hands back, as `read_udp` items (`lane_bridge.read_udp_through_lane`: no flow registered)."""
    opened = open_lane(path, ENGINE, limits)
    assert opened is not None, f"{path}: not read by the lane"
    opened[0].close()
    return list(read_udp_through_lane(path, limits, ENGINE))


def _assert_lane_reads_as_python(path: Path, limits: Limits = DEFAULT_LIMITS) -> list:
    python = list(read_udp(path, limits))
    lane = _lane_items(path, limits)
    assert len(lane) == len(python), f"{path}: {len(lane)} items from the lane, {len(python)} from Python"
    for index, (ours, theirs) in enumerate(zip(lane, python, strict=True)):
        assert ours == theirs, f"{path}: item {index} differs: {ours!r} != {theirs!r}"
    return python


CAPTURES = _pcapng_captures()


def test_the_test_data_holds_pcapng_of_every_kind() -> None:
    names = {path.name for path in CAPTURES}
    assert {"aioquic_v2_dsb.pcapng", "capture.pcapng", "aioquic_ipv4_fragments_packet_blocks_derived.pcapng"} <= names
    assert sum(path.name == "capture.pcap.zst" for path in CAPTURES) >= 70  # the scan's, compressed


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p))
def test_lane_reads_real_pcapng_as_the_python_reader(path: Path) -> None:
    items = _assert_lane_reads_as_python(path)
    assert any(type(item) is UdpDatagram for item in items)


CLASSIC = sorted(path for path in (DATA / "pcap").glob("*.pcap*") if not path.name.endswith(".pcapng"))


@pytest.mark.parametrize("path", CLASSIC, ids=lambda p: p.name)
def test_lane_reads_classic_pcap_as_the_python_reader(path: Path) -> None:
    # read_udp_through_lane (the scan's identify pass) reads classic pcap through the lane too
    assert any(type(item) is UdpDatagram for item in _assert_lane_reads_as_python(path))


def test_lane_hands_over_the_decryption_secrets_block() -> None:
    items = _assert_lane_reads_as_python(REAL)
    (secrets,) = [item for item in items if type(item) is TlsKeylogSecrets]
    assert "CLIENT_HANDSHAKE_TRAFFIC_SECRET" in secrets.text


def _needs(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.skip(f"{tool} (Debian's wireshark tools) is not installed")
    return found


def test_lane_reads_interfaces_of_two_link_types_from_mergecap(tmp_path: Path) -> None:
    # Two real captures of different link types (Linux cooked, Ethernet) merged by mergecap: one pcapng with two
    # Interface Description Blocks, packets of both interleaved by time.
    merged = tmp_path / "merged.pcapng"
    sll, ethernet = DATA / "pcap" / "aioquic_sll.pcap", DATA / "pcap" / "aioquic_v2_chacha_retry.pcap"
    subprocess.run([_needs("mergecap"), "-F", "pcapng", "-w", merged, sll, ethernet], check=True)
    items = _assert_lane_reads_as_python(merged)
    datagrams = [item for item in items if type(item) is UdpDatagram]
    assert len(datagrams) == len([i for i in read_udp(sll) if type(i) is UdpDatagram]) + len(
        [i for i in read_udp(ethernet) if type(i) is UdpDatagram]
    )


def test_lane_reads_secrets_injected_by_editcap(tmp_path: Path) -> None:
    injected = tmp_path / "injected.pcapng"
    source, keylog = DATA / "pcap" / "aioquic_sll.pcap", DATA / "pcap" / "aioquic_sll.keys.log"
    subprocess.run(
        [_needs("editcap"), "-F", "pcapng", "--inject-secrets", f"tls,{keylog}", source, injected], check=True
    )
    items = _assert_lane_reads_as_python(injected)
    (secrets,) = [item for item in items if type(item) is TlsKeylogSecrets]
    assert secrets.text.strip() == keylog.read_text(encoding="utf-8").strip()


# -- hand-made: byte orders and damage cannot be recorded here ----------------------------------------------------


def _blocks(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, type, total length) of each block of a well-formed little-endian pcapng."""
    blocks, offset = [], 0
    while offset < len(data):
        block_type, length = struct.unpack_from("<II", data, offset)
        blocks.append((offset, block_type, length))
        offset += length
    return blocks


def _big_endian_handmade(data: bytes) -> bytes:
    """The little-endian pcapng re-encoded big-endian: every block's integer fields swapped (SHB, IDB and its
    options, EPB, DSB), the packet and key log bytes as they are."""
    out = bytearray()
    for offset, block_type, length in _blocks(data):
        body = data[offset + 8 : offset + length - 4]
        if block_type == 0x0A0D0D0A:
            magic, major, minor, section = struct.unpack_from("<IHHq", body)
            new_body = struct.pack(">IHHq", magic, major, minor, section) + _options_big_endian(body[16:])
        elif block_type == 1:
            linktype, reserved, snaplen = struct.unpack_from("<HHI", body)
            new_body = struct.pack(">HHI", linktype, reserved, snaplen) + _options_big_endian(body[8:])
        elif block_type == 6:
            fields = struct.unpack_from("<IIIII", body)
            caplen = fields[3]
            padded = (caplen + 3) & ~3
            new_body = (
                struct.pack(">IIIII", *fields) + body[20 : 20 + padded] + _options_big_endian(body[20 + padded :])
            )
        elif block_type == 10:
            secrets_type, secrets_length = struct.unpack_from("<II", body)
            padded = (secrets_length + 3) & ~3
            new_body = struct.pack(">II", secrets_type, secrets_length) + body[8 : 8 + padded]
            new_body += _options_big_endian(body[8 + padded :])
        else:
            raise AssertionError(f"block type {block_type:#x} not re-encoded")
        out += struct.pack(">II", block_type, length) + new_body + struct.pack(">I", length)
    return bytes(out)


def _options_big_endian(options: bytes) -> bytes:
    out, position = bytearray(), 0
    while position + 4 <= len(options):
        code, length = struct.unpack_from("<HH", options, position)
        value = options[position + 4 : position + 4 + ((length + 3) & ~3)]
        if code == 14 and length == 8:  # if_tsoffset: a number
            value = struct.pack(">q", struct.unpack("<q", value)[0])
        out += struct.pack(">HH", code, length) + value
        position += 4 + ((length + 3) & ~3)
    return bytes(out + options[position:])


def test_lane_reads_big_endian_pcapng_handmade(tmp_path: Path) -> None:
    for source in (REAL, DATA / "pcap" / "aioquic_ipv4_fragments_tsoffset_derived.pcapng"):
        swapped = tmp_path / f"big_endian_{source.name}"
        swapped.write_bytes(_big_endian_handmade(source.read_bytes()))
        assert _assert_lane_reads_as_python(swapped) == list(read_udp(source))


def _damaged(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / f"{name}.pcapng"
    path.write_bytes(data)
    return path


def _issues(items: list) -> list[str]:
    return [item.message for item in items if type(item) is ReadIssue]


def test_lane_reads_malformed_pcapng_handmade_as_the_python_reader(tmp_path: Path) -> None:
    data = REAL.read_bytes()
    blocks = _blocks(data)
    epbs = [(offset, length) for offset, block_type, length in blocks if block_type == 6]
    middle, middle_length = epbs[len(epbs) // 2]
    late, _ = epbs[-3]

    # cut inside a block header, inside a block, inside the first interface block and in the last block
    for cut in (middle + 5, middle + middle_length - 7, blocks[1][0] + 3, len(data) - 2):
        items = _assert_lane_reads_as_python(_damaged(tmp_path, f"cut{cut}", data[:cut]))
        assert any("truncated file" in message for message in _issues(items)), cut

    # a bad block length (not a multiple of 4), one beyond the limit, one that disagrees with its trailing copy
    for name, value in (("odd", middle_length + 2), ("huge", 0xFFFF_FFF0), ("disagrees", middle_length + 4)):
        damaged = bytearray(data)
        struct.pack_into("<I", damaged, middle + 4, value)
        items = _assert_lane_reads_as_python(_damaged(tmp_path, name, bytes(damaged)))
        (message,) = _issues(items)
        assert message.startswith(f"corrupt pcapng block at byte {middle} (block length {value}"), message
    items = _assert_lane_reads_as_python(_damaged(tmp_path, "limit", data), Limits(max_record_bytes=512))
    assert any("exceeds 512 bytes (limits.max_record_bytes)" in message for message in _issues(items))

    # an unknown block type (well framed: skipped without a word) and garbage before a block (one issue)
    unknown = struct.pack("<II", 0x0000_0BEE, 20) + b"\xaa" * 8 + struct.pack("<I", 20)
    items = _assert_lane_reads_as_python(_damaged(tmp_path, "unknown", data[:middle] + unknown + data[middle:]))
    assert _issues(items) == []
    items = _assert_lane_reads_as_python(_damaged(tmp_path, "garbage", data[:middle] + bytes(range(7)) + data[middle:]))
    (message,) = _issues(items)
    assert f"skipped 7 bytes to the next valid block at byte {middle + 7}" in message

    # an Enhanced Packet Block too short for its fields, a packet of an interface never described, a new section
    # in the middle (it forgets the interfaces: the packets after it refer to none)
    short_epb = struct.pack("<II", 6, 24) + b"\0" * 12 + struct.pack("<I", 24)
    items = _assert_lane_reads_as_python(_damaged(tmp_path, "short", data[:middle] + short_epb + data[middle:]))
    assert any("too short for its fields" in message for message in _issues(items))
    foreign = bytearray(data)
    struct.pack_into("<I", foreign, middle + 8, 7)
    items = _assert_lane_reads_as_python(_damaged(tmp_path, "interface", bytes(foreign)))
    assert _issues(items) == ["packet refers to unknown interface 7"]
    section = data[: blocks[1][0]]
    items = _assert_lane_reads_as_python(_damaged(tmp_path, "section", data[:late] + section + data[late:]))
    assert _issues(items)[-1] == "packet refers to unknown interface 0"
    # a timestamp beyond int64 nanoseconds
    stamp = bytearray(data)
    struct.pack_into("<I", stamp, middle + 12, 0xFFFF_FFFF)
    items = _assert_lane_reads_as_python(_damaged(tmp_path, "stamp", bytes(stamp)))
    assert _issues(items) == ["packet time outside the years 1678-2262 (corrupt block): skipped"]


def _decoded(path: Path, engine: str) -> dict:
    import polars as pl

    from quicack.pcap.decode import decode_capture

    batches = list(decode_capture(path, None, "r", "v", engine=engine))
    return {name: pl.concat([getattr(b, name) for b in batches]) for name in ("datagrams", "packets", "ingest_issues")}


def test_damaged_compressed_captures_give_the_python_engines_rows_handmade(tmp_path: Path) -> None:
    # A gzip stream that fails its CRC in the middle: the compiled lane named the error without the reader's words
    # ("records before kept") and without the last record read, so its ingest_issues differed from the Python
    # engine's; the scan of byte deletions finds such cases (and others, which must agree too).
    import gzip

    kept = 0
    for source in (REAL, DATA / "pcap" / "aioquic_v2_chacha_retry.pcap"):
        compressed = gzip.compress(source.read_bytes(), mtime=0)
        for position in range(len(compressed) // 2, len(compressed) - 16, len(compressed) // 12):
            path = tmp_path / f"deleted{position}{source.suffix}.gz"
            path.write_bytes(compressed[:position] + compressed[position + 1 :])
            compiled, python = _decoded(path, "compiled"), _decoded(path, "python")
            for name in python:
                assert compiled[name].equals(python[name]), f"{path.name}: {name}"
            kept += any("records before kept" in m for m in python["ingest_issues"]["message"])
    assert kept >= 2


def test_lane_reads_mutated_pcapng_handmade_as_the_python_reader(tmp_path: Path) -> None:
    # Random damage to real pcapng (bytes changed, cut out, inserted; the file cut short), both block limits: the
    # lane must resynchronise, skip and report exactly as the Python reader. (1,500 such inputs checked once by
    # hand, 0 differences; here 500, seeded.)
    import random

    rng = random.Random(37)
    sources = [
        path.read_bytes() for path in (REAL, DATA / "pcap" / "aioquic_ipv4_fragments_packet_blocks_derived.pcapng")
    ]
    for index in range(500):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 8)):
            position, kind = rng.randrange(len(data)), rng.random()
            if kind < 0.6:
                data[position] = rng.randrange(256)
            elif kind < 0.8:
                del data[position : position + rng.randint(1, 40)]
            else:
                data[position:position] = rng.randbytes(rng.randint(1, 20))
        if rng.random() < 0.3:
            data = data[: rng.randrange(4, len(data))]
        data[:4] = PCAPNG_MAGIC
        limits = Limits(max_record_bytes=rng.choice([1 << 26, 2000]))
        _assert_lane_reads_as_python(_damaged(tmp_path, f"mutated{index}", bytes(data)), limits)
