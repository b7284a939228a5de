"""Pack one whole part of a long recording as its own archive in its dataset's folder.

A recording longer than a session (config/testbed_paper_conditions.yaml: ~19,800 runs) is split into parts (the
blocks' ``part``); each part, once every one of its groups is recorded, becomes one archive in the dataset's folder
(``data/paper/part-<part>.tar.xz``), which ``quicack.layout.archive`` unpacks with the folder's other archives into
one raw folder. Adding a part thus adds its own few MB to git history instead of rewriting the whole dataset.

    python -m quicack.testbed.parts --config config/testbed_paper_conditions.yaml --part A1 --into data/paper

Only the part's group folders are packed: a server/client pair's calibration file
(``client_flight_calibration.json``) stays out, because the embedded dataset may hold that pair's own and each run's
``run.json`` records the calibration it was recorded with (``drop_calibration``).
"""

from __future__ import annotations

import argparse
import lzma
import sys
from pathlib import Path

from quicack.layout.archive import ArchiveError, pack
from quicack.testbed.reduce import drop_unread_netlog, drop_unused_keylog
from quicack.testbed.run import load_config, unfinished_reason
from quicack.testbed.scenarios import RunGroup, expand, in_part

ARCHIVE_PREFIX = "part-"  # <prefix><part>.tar.xz in the dataset's folder
# A part is small (tens of MB unpacked, mostly qlog text), so xz's extreme level pays: on part A1 (2,400 runs'
# qlogs and run.json, 60.9 MB as tar) 2.18 MB instead of 2.69 MB at level 9, for 39 s of one core instead of ~10 s.
# The embedded dataset's 500 MB of captures stay at level 9 (layout.archive.XZ_PRESET: extreme took over an hour).
# Text compresses better with four literal-context bits and no position bits (lc 4, pb 0; xz's manual advises it
# for text), and with the files of one kind side by side (layout.archive.kind_order): A1 2.18 → 2.12 MB.
PART_XZ_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "lc": 4, "lp": 0, "pb": 0}]


def part_groups(testbed_cfg: dict, part: str) -> list[RunGroup]:
    """The run groups of ``part``; ValueError when the config has no such part."""
    groups = [group for group in expand(testbed_cfg) if in_part(group, part)]
    if not groups:
        parts = sorted({group.extra["part"] for group in expand(testbed_cfg) if group.extra.get("part")})
        raise ValueError(f"no part {part!r} in the config (parts: {', '.join(parts) or 'none'})")
    return groups


def unfinished(groups: list[RunGroup], raw: Path) -> list[str]:
    """The groups of a part not yet recorded whole under ``raw`` (``run.unfinished_reason``), each with why."""
    return [f"{group.key}: {why}" for group in groups if (why := unfinished_reason(group, raw)) is not None]


KEYLOG_WHY = ("the client's TLS keylog removed before the part was packed (quicack.testbed.parts): the run keeps no "
              "capture it could decrypt")
NETLOG_WHY = ("Chromium's NetLog removed before the part was packed (quicack.testbed.parts): nothing ingests it; the "
              "client-side capture and its keylog are the run's record")


def pack_part(testbed_cfg: dict, part: str, raw: Path, into: Path) -> tuple[Path, int]:
    """Pack the part's groups under ``raw`` into ``<into>/part-<part>.tar.xz``; (archive, files). ArchiveError
    when a group is not whole: a part is committed when whole. A run without captures loses its client keylog first
    (``reduce.drop_unused_keylog``, said in its run.json): ~10 % of such a run's archived bytes, decrypting nothing;
    a Chromium run loses its NetLog (``reduce.drop_unread_netlog``): ~0.3 MB per 10 MB download, read by nothing."""
    groups = part_groups(testbed_cfg, part)
    if problems := unfinished(groups, raw):
        raise ArchiveError(f"part {part} is not whole ({len(problems)} of {len(groups)} groups): "
                           + "; ".join(problems[:5]))
    for group in groups:
        for run in sorted(p for p in (raw / group.key).iterdir() if p.is_dir() and p.name.isdigit()):
            drop_unused_keylog(run, KEYLOG_WHY)
            drop_unread_netlog(run, NETLOG_WHY)
    archive = into / f"{ARCHIVE_PREFIX}{part}.tar.xz"
    return archive, pack(raw, archive, filters=PART_XZ_FILTERS, by_kind=True, only=[group.key for group in groups])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="the recording's testbed config")
    parser.add_argument("--part", required=True)
    parser.add_argument("--raw", type=Path, help="where the part was recorded (default: the config's `out`)")
    parser.add_argument("--into", type=Path, required=True, help="the dataset's folder (e.g. data/paper)")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    try:
        archive, files = pack_part(cfg, args.part, args.raw or Path(cfg["out"]), args.into)
    except (ArchiveError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"packed {files} files of part {args.part} into {archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
