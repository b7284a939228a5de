"""Data from elsewhere, measured on files that are NOT in the repository (issue 26's criteria).

    python bench/foreign_files.py --root /tmp/foreign-bench [--list bench/foreign_files.txt]

`bench/foreign_files.txt` lists the files (relative to --root) and says where each comes from; bench/README.md
("Data from elsewhere") has the numbers of the last run. Per capture (`capture <pcap> <keylog>`):

- tshark 4.0 (`-T json`, the keylog's `QUIC_` labels given under the NSS ones, which tshark 4.0 ignores) against
  quicack: every packet tshark decrypts must be decrypted by quicack with the same packet number space, number,
  frame types and raw ACK delays (`matched`; `differ` and `missing` count failures), `extra` counts packets quicack
  decrypts and tshark does not (tshark stops after a Retry answered with the same ClientHello);
- versions quicack does not read: named in an issue, and no packet row of an unread version claims decryption;
- the compiled and the pure-Python engine give equal tables.

Per qlog (`qlog <path>`): the engines agree, no packet is left without a direction, plausibility flags raised, frames
of unknown type without their name, endpoints that received ACK frames but have neither an RTT sample nor a
reason why.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

from quicack.metrics.connections import connections_table
from quicack.metrics.rtt import recompute_rtt_samples
from quicack.pcap.decode import decode_capture
from quicack.pcap.frames import FRAME_NAMES
from quicack.qlog.qlog_file import read_qlog
from quicack.schema import RUNS

TABLES = ("datagrams", "packets", "frames", "ingest_issues")
QLOG_TABLES = ("packets", "frames", "metrics_logged", "endpoints", "ingest_issues")
LONG_SPACES = {"0": "initial", "1": "appdata", "2": "handshake"}
LONG_SPACES_V2 = {"1": "initial", "2": "appdata", "3": "handshake"}


def _as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _keep_duplicates(pairs):
    out: dict = {}
    for key, value in pairs:
        if key in out:
            if not isinstance(out[key], _Many):
                out[key] = _Many([out[key]])
            out[key].append(value)
        else:
            out[key] = value
    return out


class _Many(list):
    pass


def tshark_packets(pcap: Path, keylog: Path | None) -> list[dict]:
    """One dict per QUIC packet tshark decrypted: ports, space, number, frame names, raw ACK delays."""
    with tempfile.TemporaryDirectory() as tmp:
        options = []
        if keylog is not None:
            nss = Path(tmp) / "keys.log"
            nss.write_text(
                re.sub(r"(?m)^QUIC_", "", keylog.read_text(encoding="utf-8", errors="replace")), encoding="utf-8"
            )
            options = ["-o", f"tls.keylog_file:{nss}"]
        text = subprocess.run(["tshark", "-r", str(pcap), *options, "-T", "json", "-Y", "quic"], capture_output=True,
                              text=True, check=True, encoding="utf-8").stdout
    out = []
    for record in json.loads(text or "[]", object_pairs_hook=_keep_duplicates):
        layers = record["_source"]["layers"]
        udp = _as_list(layers["udp"])[0]
        for quic in _as_list(layers.get("quic")):
            short = quic.get("quic.short")
            header = short if isinstance(short, dict) else quic
            if "quic.packet_number" not in header or "quic.frame" not in quic:
                continue
            if short is None:
                version = quic.get("quic.version", "")
                v2 = version in ("0x6b3343cf", "0x709a50c4") and "quic.long.packet_type_v2" in quic
                bits = quic.get("quic.long.packet_type_v2" if v2 else "quic.long.packet_type")
                space = (LONG_SPACES_V2 if v2 else LONG_SPACES).get(bits)
            else:
                space = "appdata"
            frames = _as_list(quic["quic.frame"])
            out.append({
                "ports": (int(udp["udp.srcport"]), int(udp["udp.dstport"])), "space": space,
                "number": int(header["quic.packet_number"]),
                "types": [FRAME_NAMES.get(int(f["quic.frame_type"]), "unknown") for f in frames],
                "delays": [int(f["quic.ack.ack_delay"]) for f in frames if "quic.ack.ack_delay" in f],
            })
    return out


def decode_tables(pcap: Path, keylog: Path | None, engine: str) -> dict[str, pl.DataFrame]:
    batches = list(decode_capture(pcap, keylog, run_id=pcap.stem, engine=engine))
    return {name: pl.concat([getattr(b, name) for b in batches]) for name in TABLES}


def measure_capture(pcap: Path, keylog: Path | None) -> dict:
    python, compiled = (decode_tables(pcap, keylog, engine) for engine in ("python", "compiled"))
    agree = all(python[name].equals(compiled[name]) for name in TABLES)
    packets, frames, issues = compiled["packets"], compiled["frames"], compiled["ingest_issues"]
    # our packets: (ports as tshark sees them, space, number) -> [(frame types, raw ACK delays)], with the ports
    # taken from the datagrams (a capture's connections share packet numbers)
    per_packet = (
        frames.with_columns(packet=(pl.col("frame_index") == 0).cum_sum())
        .group_by("packet", maintain_order=True)
        .agg(pl.col("direction").first(), pl.col("pn_space").first(), pl.col("packet_number").first(),
             pl.col("frame_type"), pl.col("ack_delay_ms").drop_nulls())
    )
    ours: dict[tuple, list] = {}
    for _, direction, space, number, types, delays in per_packet.iter_rows():
        ours.setdefault((direction, space, number), []).append((types, delays))
    theirs = tshark_packets(pcap, keylog)
    matched = differ = missing = 0
    server_port = theirs[0]["ports"][1] if theirs else None
    for packet in theirs:
        direction = "c2s" if packet["ports"][1] == server_port else "s2c"
        candidates = ours.get((direction, packet["space"], packet["number"]))
        if not candidates:
            missing += 1
            continue
        # the exponent of ACK delays: 3 in every capture listed (aioquic's and ngtcp2's default)
        wanted = [raw * 8 / 1000 for raw in packet["delays"]]
        if any(types == packet["types"] and len(delays) == len(wanted)
               and all(abs(a - b) < 1e-9 for a, b in zip(delays, wanted, strict=True)) for types, delays in candidates):
            matched += 1
        else:
            differ += 1
    decrypted = packets.filter(pl.col("decrypted").fill_null(False) & pl.col("packet_number").is_not_null()).height
    messages = issues["message"].to_list()
    unsupported = [m for m in messages if ": not supported (" in m]
    tentative = [m for m in messages if "read with draft-22's long header" in m]
    false_claims = packets.filter((pl.col("packet_type") == "unknown") & pl.col("decrypted").fill_null(False)).height
    return {"file": pcap.parent.name if pcap.name == "capture.pcap" else pcap.name, "tshark": len(theirs),
            "matched": matched, "differ": differ, "missing": missing, "extra": max(decrypted - matched - differ, 0),
            "unsupported": "; ".join(m.split(":")[0] for m in unsupported), "tentative": len(tentative),
            "false_claims": false_claims, "engines_agree": agree}


def measure_qlog(path: Path) -> dict:
    results = {engine: read_qlog(path, path.stem, engine=engine) for engine in ("python", "compiled")}
    agree = all(getattr(results["python"], name).equals(getattr(results["compiled"], name)) for name in QLOG_TABLES)
    r = results["compiled"]
    rtt = recompute_rtt_samples(r.packets, r.frames, r.endpoints)
    connections = connections_table(r.packets, r.frames, r.metrics_logged, r.endpoints, rtt,
                                    RUNS.conform(pl.DataFrame({"run_id": r.endpoints["run_id"].unique().to_list()})))
    received_acks = r.frames.filter((pl.col("event") == "received") & (pl.col("frame_type") == "ack")).height
    unexplained = (
        connections.filter(pl.col("rtt_samples").fill_null(0).eq(0) & pl.col("no_rtt_sample_reason").is_null()).height
        if received_acks
        else 0
    )
    flags = sorted({flag for flags in r.endpoints["plausibility_flags"].to_list() for flag in flags or []})
    return {"file": path.name, "packets": r.packets.height, "null_direction": r.packets["direction"].null_count(),
            "flags": ",".join(flags), "unnamed_unknown_frames": r.frames.filter(
                (pl.col("frame_type") == "unknown") & pl.col("raw_frame_type").is_null()).height,
            "rtt_samples": rtt.height, "unexplained_empty_rtt": unexplained, "engines_agree": agree,
            "issues": r.ingest_issues.height}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="where the listed files are")
    parser.add_argument("--list", type=Path, default=Path(__file__).with_name("foreign_files.txt"))
    args = parser.parse_args()
    if shutil.which("tshark") is None:
        print("tshark is needed (the reference dissector)", file=sys.stderr)
        return 2
    captures, qlogs = [], []
    for line in args.list.read_text(encoding="utf-8").splitlines():
        words = line.split("#")[0].split()
        if not words:
            continue
        if words[0] == "capture":
            keylog = args.root / words[2] if len(words) > 2 else None
            captures.append(measure_capture(args.root / words[1], keylog))
        elif words[0] == "qlog":
            qlogs.append(measure_qlog(args.root / words[1]))
    pl.Config.set_tbl_rows(200)
    pl.Config.set_tbl_width_chars(220)
    pl.Config.set_fmt_str_lengths(80)
    if captures:
        table = pl.DataFrame(captures)
        print(table)
        print(
            f"captures: {table.height}; tshark decrypted {table['tshark'].sum()} packets: {table['matched'].sum()} "
            f"the same, {table['differ'].sum()} different, {table['missing'].sum()} not decrypted by quicack; quicack "
            f"decrypted {table['extra'].sum()} more; unread versions named in {(table['unsupported'] != '').sum()} "
            f"captures, {table['false_claims'].sum()} rows claiming decryption of an unread version; engines agree "
            f"on {table['engines_agree'].sum()} of {table.height}"
        )
    if qlogs:
        table = pl.DataFrame(qlogs)
        print(table)
        print(f"qlogs: {table.height}; packets without direction {table['null_direction'].sum()}; flagged "
              f"{(table['flags'] != '').sum()}; unknown frames without a name {table['unnamed_unknown_frames'].sum()}; "
              f"endpoints with ACKs, no RTT sample and no reason {table['unexplained_empty_rtt'].sum()}; engines agree "
              f"on {table['engines_agree'].sum()} of {table.height}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
