"""QUIC versions by number (quicack.pcap.versions): every version tshark 4.0 decrypts is decrypted, with the same
packets and frames (test_pcap_tshark.py compares the real draft-era captures of tests/data/foreign packet by
packet); a version the decoder cannot read is named in one ingest issue and claims nothing; both engines hold the
same key schedule."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from test_pcap_support import DATA, Capture, decode, find_captures

from quicack.pcap.decode import decode_capture
from quicack.pcap.decoder_engine import compiled_engine
from quicack.pcap.versions import quic_version, supported_numbers

FOREIGN = DATA / "foreign"
DRAFT_CAPTURES = [c for c in find_captures(root=DATA) if c.path.parent == FOREIGN]
# draft -> the capture of it (aioquic 0.6.0 … 0.9.14 from PyPI, recorded by tests/data/foreign/record_aioquic_draft.py)
DRAFTS = {int(c.path.name.split("draft")[1].split("_")[0].split(".")[0]): c for c in DRAFT_CAPTURES}
MISLABELLED = FOREIGN / "aioquic060_labelled_draft20.pcap"  # draft-22 packets under draft-20's number


def test_the_drafts_of_the_table_have_real_captures() -> None:
    # every draft -22 … -32 (-33 and -34: no implementation spoke them), and a draft-20 number
    assert set(DRAFTS) == {20, *range(22, 33)}


@pytest.mark.parametrize("capture", DRAFT_CAPTURES, ids=lambda c: c.path.name)
def test_draft_capture_decrypts_completely(capture: Capture) -> None:
    decoded = decode(capture)
    packets = decoded.packets
    assert packets.filter(pl.col("packet_type") == "initial").height >= 2  # both sides' Initials
    protected = packets.filter(pl.col("pn_space").is_not_null())
    assert protected.height > 10 and protected["decrypted"].all()
    assert not decoded.frames["frame_type"].eq("unknown").any()
    expected = [quic_version(0xFF000014).tentative_message()] if capture.path == MISLABELLED else []
    assert decoded.ingest_issues["message"].to_list() == expected
    # the request and the whole response arrived: stream frames up to the response's FIN
    stream = decoded.frames.filter(pl.col("frame_type") == "stream")
    assert stream["fin"].any()


def test_draft_retry_layouts() -> None:
    """Up to draft-24 a Retry carries the Original DCID and no integrity tag; from draft-25 a 16-byte tag."""
    for draft, tag in ((22, 0), (24, 0), (25, 16)):
        capture = next(c for c in DRAFT_CAPTURES if f"draft{draft}_retry" in c.path.name)
        retry = decode(capture).packets.filter(pl.col("packet_type") == "retry")
        assert retry.height == 1
        assert retry["aead_tag_bytes"].item() == tag
        assert retry["header_bytes"].item() + tag == retry["packet_bytes"].item()


def test_draft_era_keylog_labels_only() -> None:
    """aioquic up to 0.9.7 labels its secrets QUIC_CLIENT_HANDSHAKE_TRAFFIC_SECRET, ... only: they decrypt."""
    draft_era = [c for c in DRAFT_CAPTURES if c.path.name.startswith(("aioquic07", "aioquic08", "aioquic097"))]
    assert len(draft_era) >= 6  # drafts -22 … -28
    for capture in draft_era:
        labels = {
            line.split()[0]
            for path in capture.keylogs
            for line in path.read_text(encoding="utf-8").splitlines()
            if line
        }
        assert labels and all(label.startswith("QUIC_") for label in labels)
        assert decode(capture).packets.filter(pl.col("packet_type") == "1rtt")["decrypted"].all()


def test_reserved_version_is_named_and_claims_nothing() -> None:
    """ngtcp2's client probing with the reserved version 0x1a2a3a4a (tests/data/pcap): one issue names it; its
    packet is a row of type 'unknown' that claims no decryption and has no frames."""
    capture = Capture(DATA / "pcap" / "ngtcp2_version_negotiation.pcap.gz",
                      (DATA / "pcap" / "ngtcp2_version_negotiation.keys.log",))
    decoded = decode(capture)
    messages = decoded.ingest_issues["message"].to_list()
    named = [m for m in messages if "0x1a2a3a4a" in m]
    assert named == [quic_version(0x1A2A3A4A).unsupported_message(1)]
    assert named[0].startswith("QUIC reserved version (0x1a2a3a4a): not supported (greasing")
    probe = decoded.packets.row(0, named=True)
    assert probe["packet_type"] == "unknown" and probe["decrypted"] is False and probe["pn_space"] is None
    assert decoded.frames.filter(pl.col("datagram_index") == 1).filter(pl.col("direction") == "c2s").height == 0


def test_mislabelled_draft_is_read_as_tshark_reads_it() -> None:
    """aioquic 0.6.0 sends draft-22 packets under the number of draft-20 (its DRAFT_17 … DRAFT_21 are labels only):
    tshark 4.0 reads drafts before -22 with draft-22's layout and keys, and so do we, because the AEAD authenticates
    them; one issue says how they were read."""
    decoded = decode(Capture(MISLABELLED, (MISLABELLED.with_suffix(".keys.log"),)))
    assert decoded.packets.filter(pl.col("pn_space").is_not_null())["decrypted"].all()
    assert decoded.packets.filter(pl.col("packet_type") == "initial").height >= 2


def test_draft_before_22_that_does_not_authenticate_is_named_handmade(tmp_path: Path) -> None:
    """Hand-made from the real mislabelled capture (a real pre-draft-22 capture cannot be recorded here): its version
    field rewritten to draft-19's number, which the AEAD covers, so nothing authenticates: every packet is counted
    under draft-19 in one issue and none claims decryption (no 'failed to decrypt', no frames)."""
    data = bytearray(MISLABELLED.read_bytes())
    data = data.replace(bytes.fromhex("ff000014"), bytes.fromhex("ff000013"))
    path = tmp_path / "draft19.pcap"
    path.write_bytes(bytes(data))
    for engine in ("python", "compiled") if compiled_engine() else ("python",):
        batches = list(decode_capture(path, MISLABELLED.with_suffix(".keys.log"), engine=engine))
        packets = pl.concat([b.packets for b in batches]).filter(pl.col("packet_type") != "datagram_padding")
        messages = pl.concat([b.ingest_issues for b in batches])["message"].to_list()
        assert messages == [quic_version(0xFF000013).unsupported_message(packets.height)]
        assert messages[0].startswith("QUIC draft-19 (0xff000013): not supported (its long header and keys predate")
        assert not packets["decrypted"].fill_null(False).any()
        assert sum(b.frames.height for b in batches) == 0


def test_table_names_and_reasons() -> None:
    assert quic_version(0xFF00000F).label == "QUIC draft-15 (0xff00000f)"
    assert quic_version(0xFF00000F).unsupported_message(12).startswith(
        "QUIC draft-15 (0xff00000f): not supported (its long header and keys predate draft-22")
    assert ", 12 packets skipped" in quic_version(0xFF00000F).unsupported_message(12)
    assert quic_version(0xFF00000F).tentative and not quic_version(0xFF000016).tentative
    assert quic_version(0x51303436).name == "Google Q046" and not quic_version(0x51303436).supported
    assert quic_version(0x00000001).label == "QUIC version 1"
    for draft in range(22, 35):
        assert quic_version(0xFF000000 + draft).supported
    assert not quic_version(0xFF000023).supported  # no draft-35
    assert quic_version(0xFF000017).key_update_label == b"traffic upd"
    assert quic_version(0xFF000018).key_update_label == b"quic ku"
    assert (
        quic_version(0xFF00001A).legacy_transport_parameters
        and not quic_version(0xFF00001B).legacy_transport_parameters
    )
    assert quic_version(0xDEADBEEF).name == "unknown version"


@pytest.mark.skipif(compiled_engine() is None, reason="quicack_core is not built (install.sh builds it)")
def test_compiled_key_schedule_is_the_table() -> None:
    """keys.rs holds the twin of the table's key schedule: the same salt and labels for every number, None for
    every version the table does not decrypt."""
    keys = compiled_engine().packet_keys
    numbers = set(supported_numbers()) | {0xFF000000 + n for n in range(0, 40)} | {
        0x1A2A3A4A, 0x51303436, 0x54303531, 0xFACEB003, 0x00000002, 0xFFFFFFFF}
    for number in sorted(numbers):
        version = quic_version(number)
        expected = (version.initial_salt, version.label_prefix, version.key_update_label) if version.supported else None
        assert keys.schedule(number) == expected, hex(number)


def test_foreign_fixtures_are_documented() -> None:
    sources = (FOREIGN / "SOURCES.md").read_text(encoding="utf-8")
    fixtures = [path for path in Path(FOREIGN).iterdir() if path.is_file() and path.name != "SOURCES.md"]
    assert len(fixtures) >= len(DRAFT_CAPTURES)
    for path in fixtures:
        assert path.name.split(".")[0] in sources, path.name
