"""Cut a recorded run to what its analysis reads, so that long transfers fit an embedded dataset.

Two cuts, both chosen in the testbed config and recorded in run.json (``testbed.forward_snaplen``,
``testbed.qlog_events_kept``):

- ``forward_snaplen``: in the client-side capture, every data frame the client did not send — a UDP datagram
  starting with a QUIC short header (1-RTT), or a TCP segment — is cut to this many bytes, as tcpdump's snap length
  would cut it (caplen < len; the original length stays in the record). The server's data packets then keep their
  IP/UDP headers and sizes but no longer decrypt; the client's packets (its ACKs: the return path) stay whole and
  decrypt, and so do the server's long-header handshake packets, which tell the decoder the connection IDs the
  client's 1-RTT packets carry. One snap length for both directions would not do: the client's ACK packets grow to
  ~150 bytes with many ACK ranges. For TCP choose a snap length that keeps the headers (≥ 14 + 20 + 60).
- ``*_qlog_events``: a qlog keeps only the named events (e.g. the receiver's ``transport:packet_sent`` and
  ``quicack:ack_sent``, the sender's ``recovery:metrics_updated``); per-packet events of the other direction are
  what makes a 1 MB transfer's qlog large.
"""

from __future__ import annotations

import gzip
import ipaddress
import json
import struct
from collections.abc import Collection
from pathlib import Path

from quicack.testbed.clients import CHROMIUM_NETLOG

_PCAP_HEADER = struct.Struct("<IHHiIII")  # classic pcap, little endian, as tcpdump writes it here
_RECORD_HEADER = struct.Struct("<IIII")  # ts_sec, ts_usec, incl_len, orig_len
_PCAP_MAGICS = (0xA1B2C3D4, 0xA1B23C4D)  # microsecond, nanosecond timestamps
_ETHERNET = 1
_ETHERNET_HEADER = 14
_IPV4_SOURCE = slice(_ETHERNET_HEADER + 12, _ETHERNET_HEADER + 16)
_UDP, _TCP = 17, 6
_QUIC_LONG_HEADER = 0x80
_RECORD_SEPARATOR = b"\x1e"  # JSON-SEQ (RFC 7464)


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)


def _carries_data(frame: bytes) -> bool:
    """An IPv4 frame with a TCP segment or a UDP datagram whose first QUIC packet has a short header."""
    if len(frame) < _ETHERNET_HEADER + 20:
        return False
    ip = frame[_ETHERNET_HEADER:]
    protocol, header_bytes = ip[9], (ip[0] & 0x0F) * 4
    if protocol == _TCP:
        return True
    quic = header_bytes + 8
    return protocol == _UDP and len(ip) > quic and not ip[quic] & _QUIC_LONG_HEADER


def cut_frames_not_from(capture: Path, source: str, snaplen: int) -> int:
    """Cut every data frame (``_carries_data``) of ``capture`` (a little-endian Ethernet pcap, optionally .gz)
    whose IPv4 source is not ``source`` to ``snaplen`` bytes; returns the number of frames cut."""
    data = _read(capture)
    magic, _major, _minor, _zone, _sigfigs, _snap, linktype = _PCAP_HEADER.unpack_from(data)
    if magic not in _PCAP_MAGICS or linktype != _ETHERNET:
        raise ValueError(f"{capture}: expected a little-endian Ethernet pcap")
    source_bytes = ipaddress.IPv4Address(source).packed
    out = [data[: _PCAP_HEADER.size]]
    offset, cut = _PCAP_HEADER.size, 0
    while offset + _RECORD_HEADER.size <= len(data):
        sec, frac, incl, orig = _RECORD_HEADER.unpack_from(data, offset)
        frame = data[offset + _RECORD_HEADER.size : offset + _RECORD_HEADER.size + incl]
        offset += _RECORD_HEADER.size + incl
        if frame[_IPV4_SOURCE] != source_bytes and len(frame) > snaplen and _carries_data(frame):
            frame, cut = frame[:snaplen], cut + 1
        out += [_RECORD_HEADER.pack(sec, frac, len(frame), orig), frame]
    _write(capture, b"".join(out))
    return cut


def keep_qlog_events(qlog: Path, names: Collection[str]) -> int:
    """Keep only the events named ``names`` in ``qlog`` (a JSON qlog with ``traces[].events`` as aioquic writes
    it, or JSON-SEQ with one event per record; optionally .gz); returns the number of events dropped."""
    data = _read(qlog)
    wanted = set(names)
    dropped = 0
    if data.lstrip().startswith(_RECORD_SEPARATOR):
        records = [r for r in data.split(_RECORD_SEPARATOR) if r.strip()]
        kept = []
        for record in records:
            try:
                event = json.loads(record)
            except ValueError:
                # A record cut off when the endpoint was stopped (quic-go's server with a connection still open) stays
                # as it was written: the reader reports it, as it would without the reduction.
                kept.append(record)
                continue
            if "name" in event and event["name"] not in wanted:
                dropped += 1
                continue
            kept.append(record)
        _write(qlog, b"".join(_RECORD_SEPARATOR + r for r in kept))
        return dropped
    document = json.loads(data)
    for trace in document.get("traces", []):
        events = trace.get("events", [])
        trace["events"] = [e for e in events if e.get("name") in wanted]
        dropped += len(events) - len(trace["events"])
    _write(qlog, json.dumps(document, separators=(",", ":")).encode())
    return dropped


def _record_cut(run_dir: Path, why: str, **settings: object) -> None:
    """Append ``why`` to run.json's ``testbed.cut_after_recording`` and set ``settings`` in ``testbed``; the file is
    replaced, never written through: the run folder may share it with another copy (hard links)."""
    record_path = run_dir / "run.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    testbed = record.setdefault("testbed", {})
    testbed.update(settings)
    testbed["cut_after_recording"] = [*testbed.get("cut_after_recording", []), why]
    replacement = record_path.with_name(record_path.name + ".new")
    replacement.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    replacement.replace(record_path)


def drop_server_side_capture(run_dir: Path, why: str) -> bool:
    """Remove a recorded run's server-side capture (``sim/trace_node_right.pcap[.gz]``) and say so in its run.json
    (``testbed.server_side_capture`` false, ``why`` in ``testbed.cut_after_recording``); False when it had none."""
    captures = [path for name in ("trace_node_right.pcap", "trace_node_right.pcap.gz")
                if (path := run_dir / "sim" / name).is_file()]  # fmt: skip
    if not captures:
        return False
    for path in captures:
        path.unlink()  # unlinked, not truncated: a hard-linked copy elsewhere keeps it
    _record_cut(run_dir, why, server_side_capture=False)
    return True


def drop_unread_netlog(run_dir: Path, why: str) -> bool:
    """Remove Chromium's NetLog of a recorded run (``clients.CHROMIUM_NETLOG``: its own log of the connection, which
    nothing ingests; the capture and its keylog are Chromium's record) and say so in its run.json
    (``testbed.netlog_kept`` false); False when the run has none."""
    netlog = run_dir / "client" / CHROMIUM_NETLOG
    if not netlog.is_file():
        return False
    netlog.unlink()
    _record_cut(run_dir, why, netlog_kept=False)
    return True


def drop_unused_keylog(run_dir: Path, why: str) -> bool:
    """Remove the client's TLS keylog of a run without captures (nothing it could decrypt: the qlog is in clear) and
    say so in its run.json (``testbed.keylog_kept`` false); False when the run has a capture or no keylog."""
    if any((run_dir / "sim").glob("*.pcap*")):
        return False
    keylogs = [path for path in (run_dir / "client").glob("*") if path.name in ("keys.log", "keylog.txt")]
    if not keylogs:
        return False
    for path in keylogs:
        path.unlink()
    _record_cut(run_dir, why, keylog_kept=False)
    return True
