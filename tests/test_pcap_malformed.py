"""Malformed input never stops the pipeline: it becomes rows in ingest_issues (hand-made inputs, derived from real
captures).

Also a hypothesis fuzz test that mutates a real capture and a real decrypted payload.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quicack.pcap.capture_file import LinkRecord, open_capture, read_link_records
from quicack.pcap.decode import decode_capture
from quicack.pcap.frames import FrameColumns, walk_frames

DATA = Path(__file__).parent / "data" / "pcap"
SMALL = DATA / "aioquic_sll.pcap"  # real aioquic run, Linux cooked capture v1
SMALL_KEYS = DATA / "aioquic_sll.keys.log"
LINKTYPE_LINUX_SLL = 113


def records(path: Path) -> list[LinkRecord]:
    with open_capture(path) as stream:
        return [r for r in read_link_records(stream) if isinstance(r, LinkRecord)]


def write_pcap(
    path: Path, items: list[tuple[int, bytes]] | list[LinkRecord], linktype: int = LINKTYPE_LINUX_SLL
) -> Path:
    """A little-endian nanosecond pcap of (time_ns, data) records."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, linktype))
    for item in items:
        time_ns, data = (item.time_abs_ns, item.data) if isinstance(item, LinkRecord) else item
        out += struct.pack("<IIII", time_ns // 1_000_000_000, time_ns % 1_000_000_000, len(data), len(data)) + data
    path.write_bytes(bytes(out))
    return path


def decode_all(path: Path, keylog: Path | None = SMALL_KEYS) -> dict[str, pl.DataFrame]:
    batches = list(decode_capture(path, keylog))
    return {
        name: pl.concat([getattr(b, name) for b in batches])
        for name in ("datagrams", "packets", "frames", "ingest_issues")
    }


def messages(tables: dict[str, pl.DataFrame]) -> str:
    return "\n".join(tables["ingest_issues"]["message"])


def assert_bytes_consistent(tables: dict[str, pl.DataFrame]) -> None:
    per_datagram = tables["packets"].group_by("direction", "datagram_index").agg(pl.col("packet_bytes").sum())
    joined = tables["datagrams"].join(per_datagram, on=["direction", "datagram_index"], how="left")
    assert (joined["udp_payload_bytes"] == joined["packet_bytes"].fill_null(0)).all()


def test_malformed_truncated_file(tmp_path: Path) -> None:
    data = SMALL.read_bytes()
    cut = write_bytes(tmp_path / "cut.pcap", data[: len(data) // 2 + 7])
    tables = decode_all(cut)
    assert tables["packets"].height > 0
    assert "truncated file" in messages(tables)
    assert (tables["ingest_issues"]["stage"] == "pcap").all()
    assert_bytes_consistent(tables)


def test_malformed_truncated_gzip(tmp_path: Path) -> None:
    compressed = gzip.compress(SMALL.read_bytes())
    tables = decode_all(write_bytes(tmp_path / "cut.pcap.gz", compressed[: len(compressed) // 2]))
    assert tables["packets"].height > 0
    assert "unreadable after this point" in messages(tables)


def test_malformed_truncated_packets_snaplen(tmp_path: Path) -> None:
    # As `tcpdump -s 120` would have recorded it: records cut, original lengths kept in the IP/UDP headers.
    cut = [LinkRecord(r.record_number, r.time_abs_ns, r.linktype, r.data[:120], r.wire_length) for r in records(SMALL)]
    tables = decode_all(write_pcap(tmp_path / "snap.pcap", cut))
    assert "truncated by the capture" in messages(tables)
    assert tables["datagrams"].height == len(cut)
    assert_bytes_consistent(tables)  # wire sizes still come from the headers


def test_malformed_corrupted_ciphertext(tmp_path: Path) -> None:
    originals = records(SMALL)
    corrupted = []
    for record in originals:
        data = bytearray(record.data)
        if len(data) > 200:
            data[-20] ^= 0xFF  # inside the AEAD-protected payload of the last packet
        corrupted.append(
            LinkRecord(record.record_number, record.time_abs_ns, record.linktype, bytes(data), record.wire_length)
        )
    tables = decode_all(write_pcap(tmp_path / "corrupt.pcap", corrupted))
    assert "failed to decrypt" in messages(tables)
    assert (~tables["packets"]["decrypted"]).sum() > 0
    assert tables["packets"]["decrypted"].sum() > 0  # small packets were left intact and still decrypt
    assert_bytes_consistent(tables)


def test_malformed_garbage_udp(tmp_path: Path) -> None:
    originals = records(SMALL)
    first = originals[0]
    header_length = 16 + 20  # SLL + IPv4 without options
    garbage_payload = bytes(range(256)) * 3
    # The same flow (same addresses and ports) carrying bytes that are not QUIC, and a non-QUIC flow.
    same_flow = bytearray(first.data[: header_length + 8] + garbage_payload)
    struct.pack_into(">H", same_flow, 16 + 2, 20 + 8 + len(garbage_payload))
    struct.pack_into(">H", same_flow, header_length + 4, 8 + len(garbage_payload))
    other_flow = bytearray(same_flow)
    struct.pack_into(">H", other_flow, header_length + 2, 9999)
    items = [*originals[:3], LinkRecord(0, first.time_abs_ns + 1, LINKTYPE_LINUX_SLL, bytes(same_flow), 0)]
    items += [LinkRecord(0, first.time_abs_ns + 2, LINKTYPE_LINUX_SLL, bytes(other_flow), 0), *originals[3:]]
    tables = decode_all(write_pcap(tmp_path / "garbage.pcap", items))
    assert "not QUIC" in messages(tables)
    assert (
        tables["datagrams"].height == len(originals) + 1
    )  # the non-QUIC flow is skipped, the garbage in the flow kept
    assert tables["packets"]["decrypted"].sum() == decode_all(SMALL)["packets"]["decrypted"].sum()
    assert_bytes_consistent(tables)


def test_malformed_keylog_with_wrong_secrets(tmp_path: Path) -> None:
    lines = []
    for line in SMALL_KEYS.read_text(encoding="utf-8").splitlines():
        label, client_random, secret = line.split()
        lines.append(f"{label} {client_random} {'ab' * (len(secret) // 2)}")
    wrong = tmp_path / "wrong.keys.log"
    wrong.write_text("\n".join(lines) + "\nnot a keylog line\n", encoding="utf-8")
    tables = decode_all(SMALL, wrong)
    packets = tables["packets"]
    assert packets.filter(pl.col("packet_type") == "initial")["decrypted"].all()  # Initial keys need no keylog
    assert not packets.filter(pl.col("packet_type") == "1rtt")["decrypted"].any()
    assert "failed to decrypt" in messages(tables)
    assert "keylog:" in messages(tables)
    assert_bytes_consistent(tables)


def test_malformed_no_keylog(tmp_path: Path) -> None:
    tables = decode_all(SMALL, None)
    assert "no keylog given" in messages(tables)
    assert tables["packets"].filter(pl.col("packet_type") == "initial")["decrypted"].all()


def test_malformed_not_a_capture(tmp_path: Path) -> None:
    tables = decode_all(write_bytes(tmp_path / "text.pcap", b"hello, this is not a capture\n" * 10))
    assert tables["datagrams"].height == 0
    assert (tables["ingest_issues"]["severity"] == "error").any()
    # An empty file is what a failed run leaves (the QUIC Interop Runner keeps it): a warning, not an error.
    tables = decode_all(write_bytes(tmp_path / "empty.pcap", b""))
    assert tables["datagrams"].height == 0
    assert "capture is empty" in messages(tables)
    assert not (tables["ingest_issues"]["severity"] == "error").any()
    tables = decode_all(tmp_path / "missing.pcap")
    assert "cannot open" in messages(tables)


def test_malformed_unknown_frame_is_counted() -> None:
    # A real 1-RTT payload start (PING) followed by an unassigned frame type: bytes all counted, rest 'unknown'.
    payload = b"\x01" + b"\x40\x21" + b"\x00" * 30
    columns = FrameColumns()
    result = walk_frames(payload, columns)
    assert columns.frame_type == ["ping", "unknown"]
    assert sum(columns.frame_bytes) == len(payload)
    assert result[4] is not None  # why decoding stopped


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=255)),
        min_size=1,
        max_size=12,
    ),
    st.integers(min_value=0, max_value=10**9),
)
def test_fuzz_mutated_capture_never_raises(tmp_path_factory, mutations: list[tuple[int, int]], cut: int) -> None:
    # Mutate a real pcap (raw UDP parsing, QUIC headers, decryption) and a real pcapng with its secrets block.
    for source, keylog in ((SMALL, SMALL_KEYS), (DATA / "aioquic_v2_dsb.pcapng", None)):
        data = bytearray(source.read_bytes())
        for position, value in mutations:
            data[position % len(data)] = value
        data = data[: max(24, len(data) - cut % 2000)]
        path = tmp_path_factory.mktemp("fuzz") / f"mutated{''.join(source.suffixes)}"
        path.write_bytes(bytes(data))
        tables = decode_all(path, keylog)
        assert_bytes_consistent(tables)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=300))
def test_fuzz_frame_walker_counts_every_byte(payload: bytes) -> None:
    columns = FrameColumns()
    walk_frames(payload, columns)
    assert sum(columns.frame_bytes) == len(payload)
    assert columns.frame_index == list(range(len(columns.frame_index)))


# -- damaged compression and corrupt pcapng blocks (hand-made from the real captures) ----------------------------

PCAPNG = DATA / "aioquic_v2_dsb.pcapng"  # real aioquic run with its secrets in a Decryption Secrets Block


def _first_damage(compressed: bytes, damage, decompress, error_type: type[BaseException]) -> bytes:
    """The first damaged variant (scanning from the middle) on which the decompressor itself raises error_type:
    proof that the case under test is the one users hit."""
    for position in range(len(compressed) // 2, len(compressed) - 16):
        damaged = damage(compressed, position)
        try:
            decompress(damaged)
        except error_type:
            return damaged
        except Exception:  # noqa: BLE001 - another error: look further
            continue
    raise AssertionError(f"no damage position raises {error_type.__name__}")


def _assert_kept_before_damage(tables: dict[str, pl.DataFrame], full: dict[str, pl.DataFrame], what: str) -> None:
    assert 0 < tables["datagrams"].height < full["datagrams"].height
    kept = ["direction", "datagram_index", "time_abs_ns", "udp_payload_bytes"]  # run_id: from the file name
    assert tables["datagrams"].select(kept).equals(full["datagrams"].head(tables["datagrams"].height).select(kept))
    # One row says where reading stopped: the decompressor's error, or the record the damaged bytes made
    # (inflate can hand out a few wrong bytes before it notices).
    (message,) = tables["ingest_issues"].filter(pl.col("severity") == "error")["message"]
    assert f"{what} after" in message or "file corrupt at byte" in message


def test_malformed_gzip_with_one_byte_deleted_is_one_issue(tmp_path: Path) -> None:
    # Deleting one byte of a .pcap.gz made gzip raise zlib.error, which nothing caught: the group's ingest died.
    import zlib

    plain = SMALL.read_bytes() * 4
    damaged = _first_damage(gzip.compress(plain, mtime=0), lambda c, i: c[:i] + c[i + 1 :], gzip.decompress, zlib.error)
    full = decode_all(write_bytes(tmp_path / "plain.pcap", plain))
    tables = decode_all(write_bytes(tmp_path / "deleted.pcap.gz", damaged))
    _assert_kept_before_damage(tables, full, "gzip data damaged")


def test_malformed_zstd_and_xz_damage_is_one_issue(tmp_path: Path) -> None:
    import lzma

    import zstandard

    # A capture of several zstd blocks and xz chunks (encrypted payloads barely compress): damage in the second
    # half is not in the first block.
    plain = gzip.decompress(DATA.joinpath("ngtcp2_keyupdate_gso.pcap.gz").read_bytes())
    full = decode_all(write_bytes(tmp_path / "plain.pcap", plain))
    flip = lambda c, i: c[:i] + bytes([c[i] ^ 0x55]) + c[i + 1 :]  # noqa: E731
    zst = _first_damage(
        zstandard.ZstdCompressor().compress(plain),
        flip,
        lambda d: zstandard.ZstdDecompressor().decompress(d, max_output_size=len(plain) * 2),
        zstandard.ZstdError,
    )
    tables = decode_all(write_bytes(tmp_path / "flipped.pcap.zst", zst))
    _assert_kept_before_damage(tables, full, "zstd data damaged")
    xz = _first_damage(lzma.compress(plain), flip, lzma.decompress, lzma.LZMAError)
    tables = decode_all(write_bytes(tmp_path / "flipped.pcap.xz", xz))
    _assert_kept_before_damage(tables, full, "xz data damaged")


def _pcapng_blocks(data: bytes) -> list[tuple[int, int]]:
    """(offset, total length) of each block of a little-endian pcapng."""
    blocks, offset = [], 0
    while offset < len(data):
        length = struct.unpack_from("<I", data, offset + 4)[0]
        blocks.append((offset, length))
        offset += length
    return blocks


def test_malformed_pcapng_short_block_in_the_middle_is_skipped(tmp_path: Path) -> None:
    # One block cut short (its last 40 bytes gone) in the middle: reading used to stop there, losing every later
    # packet. Now the reader finds the next well-framed block and keeps everything after it.
    data = PCAPNG.read_bytes()
    blocks = _pcapng_blocks(data)
    offset, length = blocks[len(blocks) // 2]
    damaged = data[: offset + length - 40] + data[offset + length :]
    full = decode_all(PCAPNG, None)
    tables = decode_all(write_bytes(tmp_path / "short.pcapng", damaged), None)
    assert tables["datagrams"].height == full["datagrams"].height - 1  # only the damaged block's datagram is lost
    (message,) = [m for m in tables["ingest_issues"]["message"] if "corrupt pcapng block" in m]
    assert f"at byte {offset}" in message and f"next valid block at byte {offset + length - 40}" in message
    # The later datagrams are the same as in the undamaged capture.
    assert tables["datagrams"].tail(5)["udp_payload_bytes"].equals(full["datagrams"].tail(5)["udp_payload_bytes"])


def test_malformed_pcapng_garbage_between_blocks_and_bad_lengths(tmp_path: Path) -> None:
    data = PCAPNG.read_bytes()
    blocks = _pcapng_blocks(data)
    third = blocks[len(blocks) // 3][0]
    two_thirds = blocks[2 * len(blocks) // 3][0]
    # 13 bytes of garbage (misaligns the rest), then a block whose length field is 0xFFFFFFF0 ("gigabytes").
    damaged = bytearray(data[:third] + bytes(range(100, 113)) + data[third:])
    struct.pack_into("<I", damaged, two_thirds + 13 + 4, 0xFFFFFFF0)
    full = decode_all(PCAPNG, None)
    tables = decode_all(write_bytes(tmp_path / "garbage.pcapng", bytes(damaged)), None)
    issues = [m for m in tables["ingest_issues"]["message"] if "corrupt pcapng block" in m]
    assert len(issues) == 2
    assert "exceeds" in issues[1] and "limits.max_record_bytes" in issues[1]
    assert tables["datagrams"].height == full["datagrams"].height - 1


def test_malformed_pcap_record_length_names_the_limit(tmp_path: Path) -> None:
    from quicack.reading.limits import Limits

    data = bytearray(SMALL.read_bytes())
    struct.pack_into("<I", data, 24 + 8, 5000)  # first record claims 5000 captured bytes
    path = write_bytes(tmp_path / "long.pcap", bytes(data))
    tables = {
        name: pl.concat(
            [getattr(b, name) for b in decode_capture(path, SMALL_KEYS, limits=Limits(max_record_bytes=4096))]
        )
        for name in ("datagrams", "ingest_issues")
    }
    assert tables["datagrams"].height == 0
    assert "exceeds 4096 bytes (limits.max_record_bytes)" in messages(tables)
