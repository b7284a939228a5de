"""`quicack scan`'s identify pass in the compiled core (`quicack_core.ScanIdentifier`, `scan.identify_core`) against
its Python twin (`scan.identify.ConnectionIdentifier`, `scan_capture._Matcher`) on the recorded scan captures
(data/scan/raw: 96 measurements of three vantage points; tests/data/scan_port_reuse: a reused client port;
tests/data/qscanner): the same connections (client SCID, original DCID, addresses, ports, first time, SNI) and each
of the decoder's datagram rows tied to the same connection — also for rows the pass never saw and rows it skips,
made by changing the recorded rows (hand-made there: the window's edge cases do not occur in these captures)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from quicack.pcap.decode import decode_capture
from quicack.pcap.decoder_engine import compiled_engine
from quicack.scan.identify import ConnectionIdentifier, datagram_owners
from quicack.scan.scan_capture import _Matcher, read_capture_facts

REPO = Path(__file__).resolve().parent.parent
CAPTURES = sorted(
    [
        *(REPO / "data" / "scan" / "raw").glob("*/data/*/capture.pcap*"),
        *(REPO / "tests" / "data" / "scan_port_reuse").glob("capture.pcap*"),
        *(REPO / "tests" / "data" / "qscanner").rglob("capture.pcap*"),
    ]
)

pytestmark = pytest.mark.skipif(compiled_engine() is None, reason="the compiled engine is not installed")


def _rows(capture: Path) -> tuple[list[int], list[int]]:
    """(time_abs_ns, udp_payload_bytes) of the decoder's datagram rows, in order."""
    datagrams = pl.concat([batch.datagrams for batch in decode_capture(capture, None, "r", "vp", batch_rows=64)])
    return datagrams["time_abs_ns"].to_list(), datagrams["udp_payload_bytes"].to_list()


def _both(capture: Path, times: list[int], sizes: list[int], chunk: int):
    """(connections, matches, unmatched) of the Python pass and of the compiled one, rows given `chunk` at a time."""
    from quicack.scan.identify_core import compiled_identify

    identifier = ConnectionIdentifier()
    python = _Matcher(datagram_owners(capture, identifier), identifier)
    compiled = compiled_identify(capture)
    assert compiled is not None
    results = []
    for matcher in (python, compiled):
        matches = []
        for start in range(0, len(times), chunk):
            matches += matcher.connections_of(times[start : start + chunk], sizes[start : start + chunk])
        results.append((matcher.connection_frame(), matches, matcher.unmatched))
    compiled.close()
    return results


def test_the_recorded_scan_captures_are_all_here():
    assert len(CAPTURES) >= 85


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda path: "/".join(path.parts[-4:]))
def test_the_compiled_pass_finds_the_connections_and_matches_of_the_python_pass(capture):
    times, sizes = _rows(capture)
    (python_frame, python_matches, python_unmatched), (frame, matches, unmatched) = _both(capture, times, sizes, 500)
    assert frame.equals(python_frame)
    assert matches == python_matches and unmatched == python_unmatched
    assert python_frame.height and python_frame["client_hello_sni"].is_not_null().any()
    assert sum(match is not None for match in matches) == len(times) - unmatched


@pytest.mark.parametrize(
    "capture", [CAPTURES[0], next(path for path in CAPTURES if "scan_port_reuse" in str(path))], ids=["scan", "reuse"]
)
def test_rows_the_pass_did_not_see_or_skipped_are_matched_alike(capture):
    """Hand-made changes of the recorded rows: rows left out (datagrams the decoder skips), a row of a size no
    datagram has (a GSO piece), a row of a later datagram's time and size, rows given one at a time."""
    times, sizes = _rows(capture)
    times, sizes = times[::3] + times[1::3], sizes[::3] + sizes[1::3]  # out of order: every third first
    times.insert(5, times[5])
    sizes.insert(5, 7)
    times.insert(9, times[-1])
    sizes.insert(9, sizes[-1])
    for chunk in (1, 7, len(times)):
        (python_frame, python_matches, python_unmatched), (frame, matches, unmatched) = _both(
            capture, times, sizes, chunk
        )
        assert frame.equals(python_frame)
        assert matches == python_matches and unmatched == python_unmatched
        assert unmatched > 0


def test_quicack_scan_uses_the_compiled_pass_with_the_same_facts(monkeypatch):
    """read_capture_facts with the compiled core (its identify pass) and with QUICACK_PCAP_ENGINE=python (the Python
    pass): every frame of the facts equal."""
    capture = next(path for path in CAPTURES if "hamburg" in str(path))
    keylogs = sorted(capture.parent.glob("key.log*"))
    compiled = read_capture_facts(capture, keylogs, "r", "vp")
    monkeypatch.setenv("QUICACK_PCAP_ENGINE", "python")
    python = read_capture_facts(capture, keylogs, "r", "vp")
    for name in ("connections", "server_datagrams", "client_initials", "issues"):
        assert getattr(compiled, name).equals(getattr(python, name)), name
    for name in ("counts", "encrypted_extensions"):  # group_by: rows in no particular order
        assert getattr(compiled, name).sort("connection").equals(getattr(python, name).sort("connection")), name
