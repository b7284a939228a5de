"""Hostile inputs trip a limit early: memory stays bounded and the bomb costs seconds (hand-made inputs).

Each bomb is generated here, streaming (nothing big is committed), and read in a child process whose peak RSS
is measured: the readers must not hold what the file claims or expands to.
"""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import quicack
from quicack.reading.limits import DEFAULT_LIMITS, Limits, limit_arguments, limits_from_mapping

GiB = 1 << 30
PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 113)
MEMBER_ZEROS = 16 << 20  # one gzip member of 16 MiB of zeros compresses to about 16 KiB


def write_gzip_bomb(path: Path, head: bytes, filler: bytes, expanded: int) -> Path:
    """``head`` then ``filler`` repeated to ``expanded`` bytes, as concatenated gzip members (one compressed
    once and written many times: seconds, whatever ``expanded`` is)."""
    member = gzip.compress(filler * (MEMBER_ZEROS // len(filler)), compresslevel=9, mtime=0)
    with open(path, "wb") as f:
        f.write(gzip.compress(head, mtime=0))
        for _ in range(expanded // MEMBER_ZEROS):
            f.write(member)
    return path


READ_IN_CHILD = """
import sys, time
kind, path = sys.argv[1], sys.argv[2]
started = time.perf_counter()
if kind == "pcap":
    from quicack.pcap.capture_file import ReadIssue, read_udp
    messages = [item.message for item in read_udp(path) if isinstance(item, ReadIssue)]
else:
    from quicack.qlog import read_qlog
    messages = list(read_qlog(path, "r").ingest_issues["message"])
print(time.perf_counter() - started)
from quicack.fuzz.runner import peak_rss_mib
print(int(peak_rss_mib()))  # not ru_maxrss: Linux keeps it across exec, from the (large) test process
print(*sorted(set(messages)), sep="\\n")  # a bomb of empty records repeats one message per record
"""


def read_in_child(kind: str, path: Path) -> tuple[float, int, str]:
    """(seconds, peak RSS in MiB, issue messages) of reading ``path`` in a fresh process."""
    env = {"PYTHONPATH": str(Path(quicack.__file__).parents[1]), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", READ_IN_CHILD, kind, str(path)], capture_output=True, text=True,
                          env=env, timeout=120, encoding="utf-8")
    assert done.returncode == 0, done.stderr
    seconds, rss, *messages = done.stdout.splitlines()
    return float(seconds), int(rss), "\n".join(messages)


def test_malformed_gzip_bomb_capture_trips_the_ratio_limit(tmp_path: Path):
    bomb = write_gzip_bomb(tmp_path / "bomb.pcap.gz", PCAP_HEADER, b"\0", 4 * GiB)
    assert bomb.stat().st_size < 5 << 20
    seconds, rss, messages = read_in_child("pcap", bomb)
    assert "decompression bomb" in messages and "limits.max_compression_ratio" in messages
    assert rss < 400, (seconds, rss)  # the limit trips early: memory, not 4 GB (time: bench/README.md)


def test_malformed_pcapng_block_claiming_gigabytes_is_bounded(tmp_path: Path):
    # A section header whose length field says 4 GB, in a gzip that really expands to 4 GB: the reader used to
    # ask for all of it at once (4.2 GB RSS, MemoryError).
    head = struct.pack("<IIIHHq", 0x0A0D0D0A, 0xFFFFFFF0, 0x1A2B3C4D, 1, 0, -1)
    bomb = write_gzip_bomb(tmp_path / "claims.pcapng.gz", head, b"\0", 4 * GiB)
    seconds, rss, messages = read_in_child("pcap", bomb)
    assert "limits.max_record_bytes" in messages or "decompression bomb" in messages
    assert rss < 400, (seconds, rss)  # the limit trips early: memory, not 4 GB (time: bench/README.md)


def test_malformed_json_qlog_of_whitespace_trips_a_limit(tmp_path: Path):
    head = b'{"qlog_format": "JSON", "qlog_version": "0.3", "traces": [{"events": ['
    bomb = write_gzip_bomb(tmp_path / "spaces.qlog.gz", head, b" ", 4 * GiB)
    seconds, rss, messages = read_in_child("qlog", bomb)
    assert "decompression bomb" in messages
    assert rss < 500, (seconds, rss)  # the limit trips early: memory, not 4 GB (time: bench/README.md)


def test_malformed_ndjson_qlog_of_newlines_trips_a_limit(tmp_path: Path):
    head = b'{"qlog_format":"NDJSON","qlog_version":"draft-02","trace":{}}\n'
    bomb = write_gzip_bomb(tmp_path / "newlines.qlog.gz", head, b"\n", 4 * GiB)
    seconds, rss, messages = read_in_child("qlog", bomb)
    assert "decompression bomb" in messages
    assert rss < 500, (seconds, rss)  # the limit trips early: memory, not 4 GB (time: bench/README.md)


def test_absolute_decompressed_size_limit(tmp_path: Path):
    from quicack.qlog import read_qlog

    head = b'{"qlog_format":"NDJSON","qlog_version":"draft-02","trace":{}}\n'
    events = b"".join(json.dumps({"time": i, "name": "x", "data": {"n": i}}).encode() + b"\n" for i in range(50_000))
    path = tmp_path / "many.qlog.gz"
    path.write_bytes(gzip.compress(head + events, mtime=0))
    r = read_qlog(path, "r", limits=Limits(max_decompressed_bytes=1 << 20))
    (message,) = [m for m in r.ingest_issues["message"] if "reading stopped" in m]
    assert "decompresses to more than 1048576 bytes (limits.max_decompressed_bytes)" in message
    assert 20_000 < r.metrics_logged.height + r.endpoints["events"][0] < 50_000  # the events before are kept


def test_limits_from_the_config_section_and_back_to_options():
    assert limits_from_mapping(None) == DEFAULT_LIMITS
    chosen = limits_from_mapping({"max_record_bytes": 1000, "max_nesting_depth": None})
    assert chosen == Limits(max_record_bytes=1000)
    assert limit_arguments(chosen) == ["--max-record-bytes=1000"]
    with pytest.raises(ValueError, match="unknown limits: max_records"):
        limits_from_mapping({"max_records": 1})


def test_config_schema_knows_every_limit():
    import yaml

    schema = yaml.safe_load(
        (Path(__file__).parents[1] / "workflow/schemas/config.schema.yaml").read_text(encoding="utf-8")
    )
    properties = schema["properties"]["limits"]["properties"]
    assert set(properties) == {f for f in Limits.__dataclass_fields__}
    for name, spec in properties.items():
        assert spec["default"] == getattr(DEFAULT_LIMITS, name), name
    config = yaml.safe_load((Path(__file__).parents[1] / "config/config.yaml").read_text(encoding="utf-8"))
    assert limits_from_mapping(config["limits"]) == DEFAULT_LIMITS


def test_pcap_and_qlog_commands_take_limits(tmp_path: Path):
    from quicack.cli import main

    deep = tmp_path / "deep.sqlog"
    deep.write_bytes(b'\x1e{"qlog_format":"JSON-SEQ","qlog_version":"0.3","trace":{}}\n\x1e{"time":1,"name":"x",'
                     b'"data":' + b"[" * 20 + b"]" * 20 + b"}\n")
    assert main(["qlog", str(deep), "--out", str(tmp_path / "q"), "--max-nesting-depth", "10"]) == 1
    import polars as pl

    messages = pl.read_parquet(tmp_path / "q" / "ingest_issues.parquet")["message"]
    assert any("nested deeper than 10 levels" in m for m in messages)
    capture = Path(__file__).parent / "data" / "pcap" / "aioquic_sll.pcap"
    assert main(["pcap", str(capture), "--out", str(tmp_path / "p"), "--max-record-bytes", "100"]) == 1
    messages = pl.read_parquet(tmp_path / "p" / "ingest_issues.parquet")["message"]
    assert any("exceeds 100 bytes (limits.max_record_bytes)" in m for m in messages)


def test_ingest_group_command_passes_its_limits_to_every_reader(tmp_path: Path):
    # What the Snakemake rule runs: a limit set on ingest-group reaches the qlog reader and the capture decoder.
    import polars as pl

    from quicack.cli import main

    raw = Path(__file__).parent / "data" / "loopback"
    parquet = tmp_path / "parquet"
    assert main(["ingest-group", "--raw", str(raw), "--group", "aioquic_aioquic", "--dataset", "t",
                 "--parquet", str(parquet), "--max-nesting-depth", "2", "--max-record-bytes", "100"]) == 0
    messages = pl.read_parquet(next((parquet / "ingest_issues").glob("*.parquet")))["message"].to_list()
    assert any("nested deeper than 2 levels (limits.max_nesting_depth)" in m for m in messages)  # qlog
    assert any("exceeds 100 bytes (limits.max_record_bytes)" in m for m in messages)  # the loopback capture
