"""A quick measured-vs-configured check of an emulated scan measurement folder.

Not the scan ingest (``quicack.scan``): just enough to see that the testbed did what ``truth.csv`` says. The
capture goes through the package's capture decoder (Initials need no keys); per connection, over the server's
Initial packets:

* ``iack`` — the first datagram with an ACK comes before the one with the ServerHello;
* ``coalesced`` — ACK and ServerHello in one datagram;
* ``sh_first`` — the ServerHello datagram comes first (or has no ACK before it);
* ``no_sh`` — no ServerHello at all.

Connections are joined to targets by the client's Source Connection ID of its first Initial (the target's scid).
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import zstandard

from quicack.pcap.capture_file import UdpDatagram, read_udp
from quicack.pcap.decode import decode_capture

PADDED_MIN_BYTES = 1200  # an instant ACK this large was padded (an ACK frame alone is a few dozen bytes)


@dataclass(frozen=True)
class Measured:
    cls: str
    first_ack_bytes: int | None  # UDP payload of the server's first datagram with an Initial ACK


def client_initial_scids(capture: Path) -> dict[str, str]:
    """scid (hex) -> original DCID (hex) of every client's first Initial to port 443 in `capture`."""
    found: dict[str, str] = {}
    for item in read_udp(capture):
        if type(item) is not UdpDatagram or item.dst_port != 443:
            continue
        b = item.payload
        # Long header, QUIC v1 Initial (type bits 00): version, DCID, SCID (RFC 9000 §17.2.2).
        if len(b) < 7 or not b[0] & 0x80 or (b[0] & 0x30) != 0 or b[1:5] != b"\x00\x00\x00\x01":
            continue
        dcid_len = b[5]
        dcid = b[6 : 6 + dcid_len]
        scid_len = b[6 + dcid_len]
        scid = b[7 + dcid_len : 7 + dcid_len + scid_len]
        found.setdefault(scid.hex(), dcid.hex())
    return found


def first_flight_classes(capture: Path) -> dict[str, Measured]:
    """original DCID (hex) -> what the server's first Initial datagrams were."""
    frames, datagrams = [], []
    for batch in decode_capture(capture):
        frames.append(batch.frames.select("connection_odcid", "direction", "datagram_index", "pn_space",
                                          "frame_type", "tls_messages"))  # fmt: skip
        datagrams.append(batch.datagrams.select("connection_odcid", "direction", "datagram_index", "udp_payload_bytes"))
    f = pl.concat(frames).filter((pl.col("direction") == "s2c") & (pl.col("pn_space") == "initial"))
    sizes = pl.concat(datagrams).filter(pl.col("direction") == "s2c")
    per_conn = f.group_by("connection_odcid").agg(
        ack=pl.col("datagram_index").filter(pl.col("frame_type") == "ack").min(),
        sh=pl.col("datagram_index").filter(pl.col("tls_messages").list.contains("server_hello").fill_null(False)).min(),
    )
    size_of = {
        (r["connection_odcid"], r["datagram_index"]): r["udp_payload_bytes"] for r in sizes.iter_rows(named=True)
    }
    out: dict[str, Measured] = {}
    for r in per_conn.iter_rows(named=True):
        ack, sh = r["ack"], r["sh"]
        if sh is None:
            cls = "no_sh"
        elif ack is not None and ack < sh:
            cls = "iack"
        elif ack == sh:
            cls = "coalesced"
        else:
            cls = "sh_first"
        out[r["connection_odcid"]] = Measured(cls, None if ack is None else size_of.get((r["connection_odcid"], ack)))
    return out


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".zst":
        data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return data.decode()


def _find(folder: Path, name: str) -> Path:
    for candidate in (folder / name, folder / f"{name}.zst"):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(folder / name)


@dataclass(frozen=True)
class Comparison:
    folder: Path
    rows: list[dict[str, str]]  # truth rows with measured_class, measured_padded, odcid added

    @property
    def agree(self) -> bool:
        return all(r["measured_class"] == r["expected_class"] and r["padded_agrees"] == "true" for r in self.rows)

    def counts(self) -> Counter[tuple[str, str]]:
        return Counter((r["expected_class"], r["measured_class"]) for r in self.rows)


def compare(folder: Path) -> Comparison:
    """Truth vs the capture, per target of one measurement folder."""
    capture = _find(folder, "capture.pcap")
    truth = list(csv.DictReader(io.StringIO(_read_text(_find(folder, "truth.csv")))))
    odcids = client_initial_scids(capture)
    measured = first_flight_classes(capture)
    rows = []
    for t in truth:
        odcid = odcids.get(t["scid"])
        m = measured.get(odcid) if odcid is not None else None
        cls = "no_initial" if odcid is None else ("no_answer" if m is None else m.cls)
        padded = m is not None and cls == "iack" and (m.first_ack_bytes or 0) >= PADDED_MIN_BYTES
        padded_agrees = cls != "iack" or padded == (t["padded"] == "true")
        rows.append(t | {"odcid": odcid or "", "measured_class": cls, "measured_padded": str(padded).lower(),
                         "padded_agrees": str(padded_agrees).lower()})  # fmt: skip
    return Comparison(folder, rows)
