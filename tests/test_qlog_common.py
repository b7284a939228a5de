"""Helpers for the qlog tests: count events in a file independently of quicack.qlog."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

QLOG_DATA = Path(__file__).parent / "data" / "qlog"


def direct_events(path: Path) -> list[dict]:
    """Every event of a qlog file as a dict (name, time, data), parsed with the standard library only."""
    text = Path(path).read_text(encoding="utf-8")
    # note: str.strip() treats RS (0x1e) as whitespace, so test the raw start
    if text[:1] == "\x1e" or '"NDJSON"' in text[:200]:
        records = [json.loads(r) for r in text.replace("\x1e", "\n").split("\n") if r.strip()]
        return [r for r in records if "name" in r]
    doc = json.loads(text)
    out = []
    for tr in doc["traces"]:
        fields = tr.get("event_fields")
        for ev in tr["events"]:
            if fields:
                d = dict(zip(fields, ev, strict=False))
                out.append({"name": f"{d.get('category')}:{d.get('event')}", "time": d.get("relative_time"),
                            "data": d.get("data")})
            else:
                out.append(ev)
    return out


def count_by_suffix(events: list[dict]) -> Counter:
    return Counter(e["name"].rsplit(":", 1)[-1] for e in events)


# -- unit tests of the pure normalization helpers ---------------------------------------------------------------


def test_acked_ranges_are_normalized_highest_first_with_singletons():
    from quicack.qlog.normalize import normalize_ranges

    assert normalize_ranges([[0, 2], [4]]) == [[4, 4], [0, 2]]
    assert normalize_ranges([[7, 5], [1, 1]]) == [[5, 7], [1, 1]]  # reversed pair fixed
    assert normalize_ranges([3]) == [[3, 3]]
    assert normalize_ranges("bad") is None


def test_frame_and_packet_type_names_map_to_rfc9000_snake_case():
    from quicack.qlog.normalize import frame_type, packet_type

    assert frame_type("crypto_frame") == "crypto"  # mvfst
    assert frame_type("ACK_ECN") == "ack"
    assert frame_type("max_streams_bidi") == "max_streams"
    assert frame_type("rst_stream") == "reset_stream"
    assert frame_type("something_new") == "unknown"
    assert packet_type("1RTT") == "1rtt"
    assert packet_type("0RTT") == "0rtt"
    assert packet_type("1rtt_protected") == "1rtt"  # picoquic
    assert packet_type(None) == "unknown"
