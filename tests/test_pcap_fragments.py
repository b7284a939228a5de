"""IP fragments are reassembled, as tshark does, and fragments that cannot make a datagram are named.

tests/data/pcap/aioquic_ipv4_fragments.pcap is a real aioquic download over a veth with MTU 576
(tests/data/pcap/record_fragmented.sh, the server in IACK mode): Linux cut the client's first Initial, and every other
datagram above 576 bytes, into fragments; the server's first answer, an ACK-only Initial, went whole. Read fragment by
fragment, the first client Initial was lost, the server's Initial was the first datagram, and the decoder took the
server for the client: every datagram in the wrong direction, and warnings that blamed the keylog. The `_derived_`
inputs are that recording with one fragment dropped, repeated, or repeated with different bytes (written by `_derive`
here), and tests/data/pcap/aioquic_ipv6_sll2's recording with its IPv6 datagrams cut into fragments by scapy
(tests/tools/fragment_ipv6_capture.py).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import polars as pl
import pytest
from test_pcap_support import DATA, Capture, decode

from quicack.pcap import ip_fragments
from quicack.pcap.decode import decode_capture
from quicack.pcap.decoder_engine import compiled_engine
from quicack.pcap.ip_fragments import CONFLICT, CUT, MISSING

RECORDED = Capture(DATA / "pcap" / "aioquic_ipv4_fragments.pcap", (DATA / "pcap" / "aioquic_ipv4_fragments.keys.log",))
TSHARK = shutil.which("tshark")
ENGINES = ("python", "compiled") if compiled_engine() is not None else ("python",)


IPV6 = DATA / "pcap" / "aioquic_ipv6_sll2.pcap.zst"
IPV6_FRAGMENTS = DATA / "pcap" / "aioquic_ipv6_fragments_derived.pcap.zst"


def _tables(path: Path, engine: str, keylogs: tuple[Path, ...] = RECORDED.keylogs) -> dict[str, pl.DataFrame]:
    batches = list(decode_capture(path, list(keylogs), "r", "v", engine=engine))
    tables = ("datagrams", "packets", "frames", "ingest_issues")
    return {name: pl.concat([getattr(b, name) for b in batches]) for name in tables}


def _tshark_udp_datagrams(path: Path) -> list[tuple[int, int]]:
    """(time_abs_ns, UDP payload bytes) of each frame in which tshark (reassembling IP fragments, its default) finds a
    UDP datagram; never empty (a capture of no datagrams would make the comparison vacuous)."""
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-Y", "udp", "-T", "fields", "-e", "frame.time_epoch", "-e", "udp.length"],
        capture_output=True, text=True, check=True, encoding="utf-8",
    ).stdout  # fmt: skip
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows, f"tshark finds no UDP datagram in {path.name}"
    return [(_epoch_ns(epoch), int(udp_length) - 8) for epoch, udp_length in rows]


def _epoch_ns(epoch: str) -> int:
    whole, fraction = epoch.split(".")
    return int(whole) * 1_000_000_000 + int(fraction.ljust(9, "0"))


def _times_and_sizes(datagrams: pl.DataFrame) -> list[tuple[int, int]]:
    return datagrams.select("time_abs_ns", "udp_payload_bytes").rows()


def _records(path: Path) -> tuple[bytes, list[bytes]]:
    """The file header and the records (each with its 16-byte header) of a little-endian classic pcap."""
    data = path.read_bytes()
    records, at = [], 24
    while at < len(data):
        (caplen,) = struct.unpack_from("<I", data, at + 8)
        records.append(data[at : at + 16 + caplen])
        at += 16 + caplen
    return data[:24], records


def _derive(tmp_path: Path, name: str, change) -> Path:
    """The recording with its records changed by `change(records)`."""
    header, records = _records(RECORDED.path)
    path = tmp_path / f"{name}.pcap"
    path.write_bytes(header + b"".join(change(records)))
    return path


def test_recorded_fragmented_client_initial_is_reassembled() -> None:
    decoded = decode(RECORDED)
    datagrams = decoded.datagrams
    assert decoded.ingest_issues.height == 0, decoded.ingest_issues["message"].to_list()
    first = datagrams.row(0, named=True)
    # the connection starts with the client's first Initial, 1200 bytes in three fragments of 20 header bytes each
    assert (first["direction"], first["udp_payload_bytes"], first["ip_header_bytes"]) == ("c2s", 1200, 60)
    # then the server's ACK-only Initial, whole (before: taken for the client's)
    server = datagrams.row(1, named=True)
    assert (server["direction"], server["udp_payload_bytes"], server["ip_header_bytes"]) == ("s2c", 50, 20)
    directions = "c2s s2c s2c c2s s2c c2s s2c c2s s2c c2s c2s".split()
    assert datagrams["direction"].to_list() == directions
    initial = decoded.packets.filter(pl.col("direction") == "c2s").row(0, named=True)
    assert (initial["packet_type"], initial["packet_number"], initial["decrypted"]) == ("initial", 0, True)
    assert datagrams.height == 11
    assert decoded.packets["decrypted"].all()


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (the reference dissector)")
def test_recorded_fragments_give_tsharks_datagrams() -> None:
    datagrams = decode(RECORDED).datagrams
    assert _times_and_sizes(datagrams) == _tshark_udp_datagrams(RECORDED.path)


@pytest.mark.parametrize("engine", ENGINES)
def test_derived_missing_fragment_is_named_and_its_datagram_skipped(tmp_path: Path, engine: str) -> None:
    # record 2 is the middle fragment of the client's first Initial (records 1-3)
    path = _derive(tmp_path, "missing", lambda records: records[:1] + records[2:])
    tables = _tables(path, engine)
    messages = tables["ingest_issues"]["message"].to_list()
    assert f"{MISSING} (capture frame 1)" in messages
    assert tables["datagrams"].height == 10
    # the server's ACK-only Initial (50 bytes) is now the first datagram: no client pads an Initial that short, so
    # the client is guessed from the ports, and said so (before: the server was taken for the client)
    assert tables["datagrams"]["direction"].to_list() == "s2c s2c c2s s2c c2s s2c c2s s2c c2s c2s".split()
    assert any(message.startswith("connection seen without its first Initial") for message in messages)
    if TSHARK is not None:
        assert _times_and_sizes(tables["datagrams"]) == _tshark_udp_datagrams(path)


@pytest.mark.parametrize("engine", ENGINES)
def test_derived_conflicting_overlap_is_named_and_its_datagram_skipped(tmp_path: Path, engine: str) -> None:
    def repeat_changed(records: list[bytes]) -> list[bytes]:
        changed = bytearray(records[1])
        changed[-1] ^= 0xFF  # the last byte of the second fragment's payload
        return records[:2] + [bytes(changed)] + records[2:]

    tables = _tables(_derive(tmp_path, "conflict", repeat_changed), engine)
    messages = tables["ingest_issues"]["message"].to_list()
    assert f"{CONFLICT} (capture frame 3)" in messages
    assert tables["datagrams"].height == 10
    assert tables["datagrams"]["udp_payload_bytes"].to_list()[:2] == [50, 1200]  # the server's first two


@pytest.mark.parametrize("engine", ENGINES)
def test_derived_repeated_fragment_is_reassembled_once(tmp_path: Path, engine: str) -> None:
    path = _derive(tmp_path, "repeated", lambda records: records[:2] + records[1:])
    tables = _tables(path, engine)
    assert tables["ingest_issues"].height == 0
    recorded = _tables(RECORDED.path, engine)
    for name in ("datagrams", "packets"):
        assert tables[name].equals(recorded[name])


@pytest.mark.parametrize("engine", ENGINES)
def test_derived_ipv6_fragments_give_the_recordings_rows(engine: str) -> None:
    # every datagram above 560 bytes in three fragments, those of the client's first Initial last first
    keylogs = (DATA / "pcap" / "aioquic_ipv6_sll2.keys.log",)
    derived, recorded = _tables(IPV6_FRAGMENTS, engine, keylogs), _tables(IPV6, engine, keylogs)
    assert derived["ingest_issues"].height == 0, derived["ingest_issues"]["message"].to_list()
    assert derived["datagrams"].drop("ip_header_bytes").equals(recorded["datagrams"].drop("ip_header_bytes"))
    assert derived["packets"].equals(recorded["packets"]) and derived["frames"].equals(recorded["frames"])
    # a fragmented datagram's IP header bytes: an IPv6 header and an 8-byte Fragment header per fragment, each
    # fragment carrying 512 bytes of the UDP datagram (560 bytes in all) but the last
    expected = [
        40 if 40 + 8 + payload <= 560 else 48 * -(-(8 + payload) // 512)
        for payload in derived["datagrams"]["udp_payload_bytes"]
    ]
    assert derived["datagrams"]["ip_header_bytes"].to_list() == expected
    assert 144 in expected and 96 in expected
    if TSHARK is not None:
        assert _times_and_sizes(derived["datagrams"]) == _tshark_udp_datagrams(IPV6_FRAGMENTS)


@pytest.mark.parametrize("engine", ENGINES)
def test_derived_fragment_cut_by_the_snap_length_is_named(tmp_path: Path, engine: str) -> None:
    def cut_first(records: list[bytes]) -> list[bytes]:
        first = bytearray(records[0][: 16 + 100])
        first[8:12] = struct.pack("<I", 100)  # caplen 100 of the first fragment's 586 bytes (snap length 100)
        return [bytes(first), *records[1:]]

    tables = _tables(_derive(tmp_path, "cut", cut_first), engine)
    assert f"{CUT} (capture frame 1)" in tables["ingest_issues"]["message"].to_list()
    assert tables["datagrams"].height == 10


@pytest.mark.parametrize("engine", ENGINES)
def test_derived_pieces_apart_longer_than_linux_waits_are_named(tmp_path: Path, engine: str) -> None:
    def delay_the_rest(records: list[bytes]) -> list[bytes]:
        # the client's first Initial's second and third fragments 31 s after its first (Linux waits 30 s)
        late = []
        for record in records[1:3]:
            seconds = struct.unpack_from("<I", record)[0] + 31
            late.append(struct.pack("<I", seconds) + record[4:])
        return [records[0], *late, *records[3:]]

    tables = _tables(_derive(tmp_path, "late", delay_the_rest), engine)
    assert f"{MISSING} [2 times] (capture frame 1, 2)" in tables["ingest_issues"]["message"].to_list()
    assert tables["datagrams"].height == 10


@pytest.mark.parametrize("limit", ["MAX_PENDING_DATAGRAMS", "MAX_PENDING_BYTES"])
def test_derived_interleaved_fragments_beyond_the_memory_bound_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str
) -> None:
    # the client's first Initial (records 1-3) and the server's first 1200-byte datagram (records 5-7) interleaved,
    # with room for one datagram's pieces only: the client's is given up when the server's second piece comes
    path = _derive(tmp_path, "interleaved", lambda r: [r[0], r[4], r[1], r[5], r[2], r[6], r[3], *r[7:]])
    assert not _tables(path, "python")["ingest_issues"].height  # interleaved, but within the bounds
    monkeypatch.setattr(ip_fragments, limit, 1 if limit == "MAX_PENDING_DATAGRAMS" else 1000)
    tables = _tables(path, "python")
    (missing,) = [message for message in tables["ingest_issues"]["message"] if message.startswith(MISSING)]
    assert "(capture frame 1, 2, " in missing  # the client's first Initial given up, for a server fragment's room
    assert tables["datagrams"].height < 11
