"""quicack.layout.archive: the embedded dataset's one-file form (data/sample/raw.tar.xz), on recorded runs."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from quicack.layout.archive import MARKER, PART_BYTES, ArchiveError, pack, parts, unpack, unpack_cached

RUNS = Path(__file__).parent / "data" / "tcp" / "raw"  # four recorded Linux TCP runs: run.json, .pcap.gz captures
REPO = Path(__file__).resolve().parents[1]


def _contents(raw: Path) -> dict[str, bytes]:
    """Every file's content, .gz files decompressed (unpack compresses them again, not byte for byte)."""
    return {
        p.relative_to(raw).as_posix(): gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        for p in raw.rglob("*")
        if p.is_file() and p.name != MARKER
    }


def test_unpack_gives_back_what_was_packed(tmp_path: Path) -> None:
    archive = tmp_path / "raw.tar.xz"
    assert pack(RUNS, archive) == len(_contents(RUNS)) > 8
    out = tmp_path / "raw"
    assert unpack(archive, out).startswith("unpacked")
    assert _contents(out) == _contents(RUNS)
    assert sorted(p.name for p in out.rglob("*.pcap.gz"))  # the layout's names, compressed again
    assert "already" in unpack(archive, out)
    again = tmp_path / "again.tar.xz"
    pack(RUNS, again)
    assert again.read_bytes() == archive.read_bytes()  # no times or owners inside: same folder, same bytes


def test_a_folder_of_ones_own_runs_is_left_alone(tmp_path: Path) -> None:
    archive = tmp_path / "raw.tar.xz"
    pack(RUNS, archive)
    own = tmp_path / "own"
    shutil.copytree(RUNS, own)
    assert "left as it is" in unpack(archive, own)
    assert not (own / MARKER).exists()


def test_a_damaged_archive_says_so_handmade(tmp_path: Path) -> None:
    archive = tmp_path / "raw.tar.xz"
    pack(RUNS, archive)
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])  # hand-made: cut in the middle
    with pytest.raises(ArchiveError, match="damaged archive"):
        unpack(archive, tmp_path / "raw")


def test_the_embedded_dataset_is_unpacked_from_its_archive() -> None:
    stored = parts(REPO / "data" / "sample" / "raw.tar.xz")
    assert stored and all(part.stat().st_size <= PART_BYTES for part in stored)
    assert sum(part.stat().st_size for part in stored) < 40e6
    raw = REPO / "data" / "sample" / "raw"
    assert (raw / MARKER).is_file(), "install.sh unpacks data/sample/raw.tar.xz"
    # unpacked outside the repository and linked: data/ holds only what git tracks
    assert raw.is_symlink() and REPO not in raw.resolve().parents


def test_a_cached_unpack_is_shared_and_linked(tmp_path: Path) -> None:
    archive = tmp_path / "raw.tar.xz"
    pack(RUNS, archive)
    cache = tmp_path / "cache"
    first, second = tmp_path / "one" / "raw", tmp_path / "two" / "raw"
    assert "unpacked" in unpack_cached(archive, first, cache)
    assert "already" in unpack_cached(archive, second, cache)  # a second checkout of the same archive: no copy
    assert first.is_symlink() and first.resolve() == second.resolve() and cache in first.resolve().parents
    assert _contents(first) == _contents(RUNS)
    # an unpack in place from before the cache is replaced by the link; a folder of one's own runs is not
    in_place = tmp_path / "three" / "raw"
    unpack(archive, in_place)
    unpack_cached(archive, in_place, cache)
    assert in_place.is_symlink() and _contents(in_place) == _contents(RUNS)
    own = tmp_path / "own"
    shutil.copytree(RUNS, own)
    assert "left as it is" in unpack_cached(archive, own, cache)
    assert not own.is_symlink() and _contents(own) == _contents(RUNS)
    # the cache removed: the dangling link is made good again
    shutil.rmtree(cache)
    assert "unpacked" in unpack_cached(archive, first, cache) and _contents(first) == _contents(RUNS)


def test_a_large_archive_is_stored_in_parts_that_unpack_alike(tmp_path: Path) -> None:
    whole, split = tmp_path / "whole" / "raw.tar.xz", tmp_path / "split" / "raw.tar.xz"
    whole.parent.mkdir()
    split.parent.mkdir()
    pack(RUNS, whole)
    size = whole.stat().st_size
    pack(RUNS, split, part_bytes=size // 3)
    stored = parts(split)
    assert not split.exists() and len(stored) == 4 and b"".join(p.read_bytes() for p in stored) == whole.read_bytes()
    unpack(split, tmp_path / "raw")
    assert sorted(p.relative_to(tmp_path / "raw") for p in (tmp_path / "raw").rglob("*") if p.is_file() and p.name != MARKER) == \
        sorted(p.relative_to(RUNS) for p in RUNS.rglob("*") if p.is_file())
