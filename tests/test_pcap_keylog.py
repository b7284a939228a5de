"""Keylogs as the field writes them (quicack.pcap.keylog): NSS labels and the draft era's QUIC_* labels for the same
secrets, CRLF, comments, other connections' secrets; "no keylog given" only when none was given.

The keylogs are real: quiclog/pcap2qlog's (tests/data/foreign/SOURCES.md) and those aioquic 0.7 … 0.9.14 wrote
beside the draft captures. The variants with CRLF, comments and a byte order mark are made from them here (named so)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from test_pcap_support import DATA, Capture, decode

from quicack.pcap.keylog import CLIENT_HANDSHAKE, SERVER_APPLICATION, Keylog, load_keylogs

FOREIGN = DATA / "foreign"
DRAFT22 = FOREIGN / "aioquic070_draft22_keyupdate"


def test_draft_era_labels_are_the_same_secrets() -> None:
    """pcap2qlog's draft-22 keylog (QUIC_* labels only) and its ngtcp2 keylog (each secret under both labels, an
    EXPORTER_SECRET, SHA-384 secrets of 48 bytes)."""
    only_draft = load_keylogs([FOREIGN / "pcap2qlog_new_cid.keys"])
    random = bytes.fromhex("54353018a610f4aae62a3b4520c39000aa456cfd624c25c0b56996341e29174a")
    assert set(only_draft.secrets[random]) == {"CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                                               "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"}
    both = load_keylogs([FOREIGN / "pcap2qlog_local_ssl.key"])
    assert not both.problems and len(both) == 1
    (secrets,) = both.secrets.values()
    assert len(secrets[CLIENT_HANDSHAKE]) == 48 and len(secrets[SERVER_APPLICATION]) == 48
    assert both.other_labels == {"EXPORTER_SECRET": 1}


def test_crlf_comments_and_other_connections_variant_of_a_real_keylog(tmp_path: Path) -> None:
    """aioquic 0.7.0's draft-22 keylog rewritten as a Windows tool would keep it (CRLF, a byte order mark, comments),
    with another connection's secrets (pcap2qlog's) before its own: the capture decrypts as with the original."""
    original = (DRAFT22.with_suffix(".keys.log")).read_text(encoding="utf-8")
    other = (FOREIGN / "pcap2qlog_local_ssl.key").read_text(encoding="utf-8")
    text = "\ufeff# SSLKEYLOGFILE\r\n" + other.replace("\n", "\r\n") + "# ours\r\n\r\n" + original.replace("\n", "\r\n")
    variant = tmp_path / "keys.log"
    variant.write_bytes(text.encode())
    keylog = load_keylogs([variant])
    assert not keylog.problems and len(keylog) == 2
    capture = DRAFT22.with_suffix(".pcap")
    as_written = decode(Capture(capture, (variant,)))
    reference = decode(Capture(capture, (DRAFT22.with_suffix(".keys.log"),)))
    assert as_written.packets.drop("run_id").equals(reference.packets.drop("run_id"))
    assert as_written.packets.filter(pl.col("pn_space").is_not_null())["decrypted"].all()


def test_no_keylog_given_only_when_none_was(tmp_path: Path) -> None:
    capture = DRAFT22.with_suffix(".pcap")
    none = decode(Capture(capture, ()))
    assert any("packets not decrypted: no keylog given" in m for m in none.ingest_issues["message"])
    # a keylog without any secret QUIC uses (the EXPORTER_SECRET line of a real one: hand-made from it)
    exporter = tmp_path / "exporter.keys.log"
    exporter.write_text(
        "".join(
            line + "\n"
            for line in (FOREIGN / "pcap2qlog_local_ssl.key").read_text(encoding="utf-8").splitlines()
            if line.startswith("EXPORTER_SECRET")
        ),
        encoding="utf-8",
    )
    wrong = decode(Capture(capture, (exporter,)))
    messages = wrong.ingest_issues["message"].to_list()
    assert not any("no keylog given" in m for m in messages)
    assert any(
        "the keylog holds no TLS 1.3 traffic secrets QUIC uses (only EXPORTER_SECRET (1))" in m for m in messages
    )
    # another connection's secrets only: said as such
    other = decode(Capture(capture, (FOREIGN / "pcap2qlog_new_cid.keys",)))
    assert any("no secrets for this connection's client random" in m for m in other.ingest_issues["message"])


def _read_whole(paths: list[Path]) -> Keylog:
    """What load_keylogs did before it read line by line: each file's whole text through add_text."""
    keylog = Keylog()
    for path in paths:
        keylog.add_text(path.read_bytes().decode(errors="replace"), str(path))
    return keylog


def test_reading_line_by_line_gives_what_the_whole_text_gave(tmp_path: Path) -> None:
    """load_keylogs reads each file line by line (a scan's key log is ~640 bytes per connection): the same secrets,
    problems, labels and order as the whole text through add_text, for real keylogs and for a variant of them made
    here with every line end str.splitlines() knows (CRLF, CR, vertical tab, form feed, NEL, U+2028), a byte order
    mark, a malformed line, bytes that are not UTF-8 and no final line end; two files, the later one winning."""
    originals = [FOREIGN / "pcap2qlog_local_ssl.key", FOREIGN / "pcap2qlog_new_cid.keys"]
    originals.append(DRAFT22.with_suffix(".keys.log"))
    lines = [line for path in originals for line in path.read_text(encoding="utf-8").splitlines()]
    ends = ["\r\n", "\r", "\x0b", "\x0c", "\x85", "\u2028", "\n"]
    text = "\ufeff" + "".join(line + ends[number % len(ends)] for number, line in enumerate(lines))
    variant = tmp_path / "variant.log"
    variant.write_bytes(text.encode() + b"not a key log line \xff\xfe\r\nCLIENT_RANDOM 00 11")
    for paths in ([variant], [*originals, variant], [variant, *originals]):
        streamed, whole = load_keylogs(paths), _read_whole(paths)
        assert streamed.secrets == whole.secrets and list(streamed.secrets) == list(whole.secrets)
        assert streamed.problems == whole.problems and streamed.problems
        assert streamed.other_labels == whole.other_labels and streamed.sources == whole.sources
