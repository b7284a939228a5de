"""A dataset N times the size of a raw folder, made of distinct connections, for measuring how the pipeline scales.

    PYTHONPATH=src python bench/scale_dataset.py SRC DST --copies 10 [--jobs 2] [--seed 0] [--groups G ...]

DST gets every run group and test case of SRC (QUIC Interop Runner layout, quicack.layout.runs) with, per run,
the original repetition and `copies - 1` copies of it as new repetitions (repetition r -> r + 100·k, k = 1 ..
copies-1; run.json's run_id / raw_path / repetition and group.json's run list follow). In each copy every QUIC
connection ID is new (same length, a keyed hash of the old one with a key per run and copy, so one ID maps the
same way everywhere in the copy):

- captures: every header, the transport parameters in the CRYPTO streams and NEW_CONNECTION_ID frames, every
  packet re-protected (bench/reprotect.py: new Initial keys, same Handshake/1-RTT secrets), UDP checksums fixed,
  every timestamp k hours later;
- qlogs, file names and run.json: every hex string that is one of the run's connection IDs (from the captures
  and from the qlogs' CID fields) is replaced, bounded by non-hex characters.

Kept: the key logs (client randoms and secrets: they are not connection IDs, and a copy must decrypt with them),
UDP ports and addresses, payload bytes, packet sizes and timing within a run. Non-QUIC records (the TCP runs) are
copied with the time shift only.

    --verify K   afterwards, for K runs with captures: the count of decrypted packets of quicack's decoder
                 (python -m quicack.pcap.pcap_command) and of tshark (QUIC frames it decrypted) must be equal in the
                 original and in copy 1, and no connection ID of the original may appear in the copy.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from reprotect import CidMap, analyse_run, write_copy

from quicack.layout.archive import MARKER
from quicack.layout.runs import RUN_JSON, capture_files, discover_runs, is_qlog_name, keylog_files
from quicack.pcap.keylog import load_keylogs

REPETITION_STRIDE = 100
SHIFT_SECONDS_PER_COPY = 3600
QLOG_CID_FIELDS = re.compile(
    rb'"(?:dcid|scid|odcid|connection_id|group_id|original_destination_connection_id|initial_source_connection_id'
    rb'|retry_source_connection_id|new_connection_id)"\s*:\s*"([0-9a-fA-F]{2,40})"'
)


def qlog_cids(text: bytes) -> set[bytes]:
    return {bytes.fromhex(m.decode()) for m in QLOG_CID_FIELDS.findall(text) if len(m) % 2 == 0}


class HexIds:
    """Where a run's connection IDs occur as hex (either case, not part of a longer hex string) in a text, found once
    per text; each copy then maps them with its own CidMap (the regular expression's scan was a third of a copy's
    time when it ran once per copy)."""

    def __init__(self, cids: set[bytes]) -> None:
        alternatives = b"|".join(re.escape(c.hex().encode()) for c in sorted(cids, key=len, reverse=True))
        self.pattern = (
            re.compile(rb"(?<![0-9a-fA-F])(" + alternatives + rb")(?![0-9a-fA-F])", re.IGNORECASE) if cids else None
        )

    def split(self, data: bytes) -> list[bytes]:
        """The text cut at every ID: text, ID, text, ID, …, text (every odd item an ID)."""
        return self.pattern.split(data) if self.pattern is not None else [data]

    @staticmethod
    def join(parts: list[bytes], cid_map: CidMap) -> bytes:
        return b"".join(_mapped_hex(part, cid_map) if index % 2 else part for index, part in enumerate(parts))

    def substitute(self, data: bytes, cid_map: CidMap) -> bytes:
        return self.join(self.split(data), cid_map)


def _mapped_hex(old: bytes, cid_map: CidMap) -> bytes:
    new = cid_map(bytes.fromhex(old.decode())).hex().encode()
    return new.upper() if old.isupper() else new


def copy_run(run_dir: Path, run_id: str, src_root: Path, dst_root: Path, copies: int, seed: int) -> dict:
    """Write the run itself (copy 0, as it is) and its copies 1 .. copies-1; return counts for the log."""
    relative = run_dir.relative_to(src_root)
    shutil.copytree(run_dir, dst_root / relative)
    repetition = int(run_dir.name)
    run = type("Run", (), {"path": run_dir})  # what capture_files / keylog_files read
    captures = capture_files(run)
    analysis = analyse_run(captures, load_keylogs(keylog_files(run))) if captures else None
    qlogs = [p for p in sorted(run_dir.rglob("*")) if p.is_file() and is_qlog_name(p)]
    qlog_texts = {p: _read(p) for p in qlogs}
    cids = set(analysis.cids) if analysis else set()
    for text in qlog_texts.values():
        cids |= qlog_cids(text)
    hex_ids = HexIds(cids)
    qlog_parts = {p: hex_ids.split(text) for p, text in qlog_texts.items()}
    for k in range(1, copies):
        key = hashlib.blake2b(f"{seed}/{run_id}/{k}".encode(), digest_size=32).digest()
        cid_map = CidMap(key)
        new_repetition = repetition + REPETITION_STRIDE * k
        target = dst_root / relative.parent / str(new_repetition)
        for path in sorted(run_dir.rglob("*")):
            if path.is_dir():
                continue
            out = target / hex_ids.substitute(str(path.relative_to(run_dir)).encode(), cid_map).decode()
            out.parent.mkdir(parents=True, exist_ok=True)
            if path in captures:
                write_copy(analysis, path, out, cid_map, SHIFT_SECONDS_PER_COPY * k)
            elif path in qlog_parts:
                _write(out, hex_ids.join(qlog_parts[path], cid_map), compress=path.suffix == ".gz")
            elif path.name == RUN_JSON:
                description = json.loads(hex_ids.substitute(path.read_bytes(), cid_map))
                old_id = f"{relative.parent.as_posix()}/{repetition}"
                new_id = f"{relative.parent.as_posix()}/{new_repetition}"
                for name in ("run_id", "raw_path"):
                    if isinstance(description.get(name), str) and description[name].endswith(old_id):
                        description[name] = description[name][: -len(old_id)] + new_id
                description["repetition"] = new_repetition
                description["synthesised_copy_of"] = run_id
                out.write_text(json.dumps(description, indent=1), encoding="utf-8")
            else:
                shutil.copy2(path, out)
    return {
        "run": run_id,
        "packets": analysis.packets if analysis else 0,
        "decrypted": analysis.decrypted if analysis else 0,
        "cids": len(cids),
    }


def _read(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def _write(path: Path, data: bytes, compress: bool) -> None:
    path.write_bytes(gzip.compress(data, compresslevel=6) if compress else data)


def extend_group_json(path: Path, out: Path, copies: int) -> None:
    description = json.loads(path.read_text(encoding="utf-8"))
    runs = description.get("runs")
    if isinstance(runs, list):
        description["runs"] = runs + [
            {**entry, "repetition": entry["repetition"] + REPETITION_STRIDE * k}
            for k in range(1, copies)
            for entry in runs
            if isinstance(entry, dict) and isinstance(entry.get("repetition"), int)
        ]
    out.write_text(json.dumps(description, indent=1), encoding="utf-8")


def synthesise(src: Path, dst: Path, copies: int, jobs: int, seed: int, groups: list[str] | None = None) -> None:
    runs = []
    for group in sorted(p for p in src.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if groups is None or group.name in groups:
            runs.extend(discover_runs(group, src))
    for run in runs:
        if not run.path.name.isdigit():
            raise SystemExit(f"{run.run_id}: a run folder not named by its repetition; cannot add repetitions")
    # Files beside the runs (group.json, anything else) first.
    run_paths = {run.path for run in runs}
    for path in sorted(src.rglob("*")):
        if path.name == MARKER or (groups is not None and path.relative_to(src).parts[0] not in groups):
            continue  # the copies are no unpack of the archive its marker lists
        if path.is_file() and not any(parent in run_paths for parent in path.parents):
            out = dst / path.relative_to(src)
            out.parent.mkdir(parents=True, exist_ok=True)
            if path.name == "group.json":
                extend_group_json(path, out, copies)
            else:
                shutil.copy2(path, out)
    packets = decrypted = 0
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(copy_run, run.path, run.run_id, src, dst, copies, seed) for run in runs]
        for done, future in enumerate(futures, start=1):
            result = future.result()
            packets += result["packets"]
            decrypted += result["decrypted"]
            if done % 100 == 0 or done == len(futures):
                print(f"{done}/{len(runs)} runs; {decrypted:,} of {packets:,} QUIC packets decrypted", flush=True)


def decoder_counts(capture: Path, keylogs: list[Path]) -> tuple[int, int]:
    """(packets, decrypted packets) of quicack's decoder."""
    import polars as pl

    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "quicack.pcap.pcap_command", str(capture), "--out", out]
        for keylog in keylogs:
            command += ["--keylog", str(keylog)]
        subprocess.run(command, check=True, capture_output=True)
        packets = pl.read_parquet(Path(out) / "packets.parquet")
        quic = packets.filter(pl.col("packet_type") != "datagram_padding")
        return quic.height, int(quic["decrypted"].sum())


def tshark_counts(capture: Path, keylog: Path | None) -> int:
    """QUIC frames tshark decrypted (one line per frame type field)."""
    command = ["tshark", "-r", str(capture), "-Y", "quic", "-T", "fields", "-e", "quic.frame_type"]
    if keylog is not None:
        command[1:1] = ["-o", f"tls.keylog_file:{keylog}"]
    output = subprocess.run(command, check=True, capture_output=True, text=True, encoding="utf-8").stdout
    return sum(len([t for t in line.split(",") if t]) for line in output.splitlines())


def verify(src: Path, dst: Path, count: int, groups: list[str] | None = None) -> bool:
    runs = [
        r
        for g in sorted(p for p in src.iterdir() if p.is_dir() and (groups is None or p.name in groups))
        for r in discover_runs(g, src)
    ]
    with_captures = [r for r in runs if capture_files(r) and keylog_files(r)]
    step = max(1, len(with_captures) // count)
    ok = True
    for run in with_captures[::step][:count]:
        copy_dir = dst / Path(run.run_id).parent / str(int(run.path.name) + REPETITION_STRIDE)
        copy_run_folder = type("Run", (), {"path": copy_dir})
        original_cids = analyse_run(capture_files(run), load_keylogs(keylog_files(run))).cids
        copy_cids = analyse_run(capture_files(copy_run_folder), load_keylogs(keylog_files(copy_run_folder))).cids
        for original, copy in zip(capture_files(run), capture_files(copy_run_folder), strict=True):
            keylogs = keylog_files(run)
            before, after = decoder_counts(original, keylogs), decoder_counts(copy, keylog_files(copy_run_folder))
            shark_before = tshark_counts(original, keylogs[0] if keylogs else None)
            shark_after = tshark_counts(copy, keylog_files(copy_run_folder)[0] if keylogs else None)
            shared = original_cids & copy_cids
            copy_texts = b"".join(_read(p) for p in sorted(copy_dir.rglob("*")) if p.is_file() and is_qlog_name(p))
            shared |= {c for c in original_cids if len(c) >= 4 and c.hex().encode() in copy_texts.lower()}
            good = before == after and shark_before == shark_after and not shared
            ok &= good
            print(
                f"{'ok ' if good else 'BAD'} {run.run_id} {original.name}: quicack decrypted {before[1]}/{before[0]}"
                f" -> {after[1]}/{after[0]}; tshark frames {shark_before} -> {shark_after};"
                f" IDs {len(original_cids)} -> {len(copy_cids)}, shared {len(shared)}"
            )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--copies", type=int, default=10, help="the new dataset's size in multiples of SRC")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="another seed, other connection IDs")
    parser.add_argument("--verify", type=int, default=0, metavar="K")
    parser.add_argument("--verify-only", action="store_true", help="check an existing DST")
    parser.add_argument(
        "--groups", nargs="+", metavar="GROUP", help="only these run groups (into DST, which may then exist already)"
    )
    args = parser.parse_args()
    if not args.verify_only:
        targets = [args.dst / group for group in args.groups] if args.groups else [args.dst]
        if existing := [str(target) for target in targets if target.exists()]:
            raise SystemExit(f"{', '.join(existing)} exists")
        synthesise(args.src.resolve(), args.dst, args.copies, args.jobs, args.seed, args.groups)
    if args.verify and not verify(args.src.resolve(), args.dst, args.verify, args.groups):
        raise SystemExit("verification failed")


if __name__ == "__main__":
    main()
