"""quicack.layout.archive: the embedded dataset's one-file form (data/sample/raw.tar.xz), on recorded runs."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quicack.layout.archive import (
    MARKER,
    PART_BYTES,
    ArchiveError,
    check_raw,
    dataset_archives,
    pack,
    parts,
    unpack,
    unpack_cached,
    unpacked_state,
)

RUNS = Path(__file__).parent / "data" / "tcp" / "raw"  # four recorded Linux TCP runs: run.json, .pcap.gz captures
LOOPBACK = Path(__file__).parent / "data" / "loopback"  # recorded runs on loopback: 79 files, 5 MB
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
    for dataset in ("sample", "paper"):
        stored = [part for archive in dataset_archives(REPO / "data" / dataset) for part in parts(archive)]
        assert stored and all(part.stat().st_size <= PART_BYTES for part in stored), dataset
    # The data budget: what git keeps under data/ (the datasets' archives, the scan, the reference tables, and what
    # would be committed: untracked files git does not ignore) under 60 MB. The unpacked datasets are links into the
    # cache and a recording in progress is ignored (.gitignore): neither counts.
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "data"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")  # fmt: skip
    kept = [REPO / name for name in listed if name and (REPO / name).is_file()]
    assert kept and sum(path.lstat().st_size for path in kept if not path.is_symlink()) < 60e6
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
    assert sorted(
        p.relative_to(tmp_path / "raw") for p in (tmp_path / "raw").rglob("*") if p.is_file() and p.name != MARKER
    ) == sorted(p.relative_to(RUNS) for p in RUNS.rglob("*") if p.is_file())


def _unpack_command(archive: Path, link: Path) -> list[str]:
    return [sys.executable, "-m", "quicack.layout.archive", "unpack", "--cached", str(archive), str(link)]


def test_a_killed_unpack_is_never_taken_for_the_dataset_and_the_rerun_repairs_it(tmp_path: Path) -> None:
    """install.sh's unpack killed (SIGKILL) while it writes files: no raw folder and no link appear, and the next
    run unpacks the whole archive."""
    archive = tmp_path / "raw.tar.xz"
    total = pack(LOOPBACK, archive)
    link = tmp_path / "checkout" / "raw"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache_home")}
    cache = tmp_path / "cache_home" / "quicack"
    unpacking = subprocess.Popen(_unpack_command(archive, link), env=env, stdout=subprocess.DEVNULL)
    written = 0
    deadline = time.monotonic() + 120
    while written == 0 and unpacking.poll() is None and time.monotonic() < deadline:
        written = sum(1 for p in cache.rglob("*") if p.is_file()) if cache.is_dir() else 0
        time.sleep(0.002)
    unpacking.kill()
    unpacking.wait()
    assert 0 < written < total, f"the kill should land while files are written ({written} of {total})"
    assert not link.exists() and not link.is_symlink()
    (unpacked,) = cache.iterdir()
    assert not (unpacked / "raw").exists()  # only the staging folder of the killed process

    rerun = subprocess.run(
        _unpack_command(archive, link), env=env, capture_output=True, text=True, timeout=300, encoding="utf-8"
    )
    assert rerun.returncode == 0 and "unpacked" in rerun.stdout, rerun.stderr
    assert _contents(link) == _contents(LOOPBACK)
    assert not list(cache.glob("*/.raw.unpacking-*"))  # the killed one's staging folder removed
    assert check_raw(link, cache) is None and unpacked_state(link) == "complete"


def test_a_partial_unpack_in_the_cache_is_replaced_and_a_cut_one_repaired(tmp_path: Path) -> None:
    """What an earlier version's killed unpack left in the cache (files, no marker) is not accepted, neither is an
    unpack whose listed files were removed or cut afterwards; both are unpacked again."""
    archive = tmp_path / "raw.tar.xz"
    pack(RUNS, archive)
    cache, link = tmp_path / "cache", tmp_path / "checkout" / "raw"
    unpack_cached(archive, link, cache)
    target = link.resolve()
    (target / MARKER).unlink()
    first_capture = sorted(target.rglob("*.pcap.gz"))[0]
    first_capture.unlink()  # as an unpack killed before its last file, without the staging
    assert unpacked_state(target) == "foreign" and "did not finish" in (check_raw(link, cache) or "")
    assert "incomplete" in unpack_cached(archive, link, cache)
    assert _contents(link) == _contents(RUNS) and unpacked_state(link) == "complete"
    # a listed file cut after the unpack: the marker's sizes show it
    capture = sorted(target.rglob("*.pcap.gz"))[0]
    capture.write_bytes(capture.read_bytes()[:100])
    assert unpacked_state(link) == "incomplete" and "incomplete unpack" in (check_raw(link, cache) or "")
    assert "incomplete" in unpack_cached(archive, link, cache)
    assert _contents(link) == _contents(RUNS)


def test_a_dataset_kept_as_several_archives_unpacks_into_one_folder(tmp_path: Path) -> None:
    """A recording made over several sessions adds one archive per whole part beside raw.tar.xz; unpacked together
    they are the dataset, as the folder they were packed from."""
    dataset = tmp_path / "dataset"
    groups = sorted(p.relative_to(RUNS).as_posix() for p in RUNS.glob("*/*") if p.is_dir())
    assert len(groups) == 4
    pack(RUNS, dataset / "raw.tar.xz", only=groups[:2])
    pack(RUNS, dataset / "paper-B.tar.xz", only=groups[3:])
    pack(RUNS, dataset / "paper-A.tar.xz", only=groups[2:3], part_bytes=1000)  # stored as numbered parts
    assert [a.name for a in dataset_archives(dataset)] == ["raw.tar.xz", "paper-A.tar.xz", "paper-B.tar.xz"]
    raw = tmp_path / "raw"
    assert "raw.tar.xz + paper-A.tar.xz + paper-B.tar.xz" in unpack(dataset_archives(dataset), raw)
    assert _contents(raw) == _contents(RUNS)
    # The folder is complete for these archives only: one more part is a new dataset, unpacked again.
    assert "already" in unpack(dataset_archives(dataset), raw)
    assert unpacked_state(raw, None) == "complete"
    cache = tmp_path / "cache"
    one = unpack_cached(dataset_archives(dataset)[:1], tmp_path / "one" / "raw", cache)
    both = unpack_cached(dataset_archives(dataset), tmp_path / "all" / "raw", cache)
    assert "unpacked" in one and "unpacked" in both
    assert (tmp_path / "one" / "raw").resolve() != (tmp_path / "all" / "raw").resolve()
    assert _contents(tmp_path / "all" / "raw") == _contents(RUNS)


def test_a_file_in_two_archives_of_a_dataset_is_refused(tmp_path: Path) -> None:
    groups = sorted(p.relative_to(RUNS).as_posix() for p in RUNS.glob("*/*") if p.is_dir())
    pack(RUNS, tmp_path / "raw.tar.xz", only=groups[:2])
    pack(RUNS, tmp_path / "paper-A.tar.xz", only=groups[1:3])  # the second group in both
    with pytest.raises(ArchiveError, match="in an earlier archive of the dataset"):
        unpack(dataset_archives(tmp_path), tmp_path / "raw")
    assert not (tmp_path / "raw").exists()  # nothing half-unpacked is left for the dataset
    with pytest.raises(ArchiveError, match="nothing there to pack"):
        pack(RUNS, tmp_path / "x.tar.xz", only=["linux-tcp_linux-tcp/not-recorded"])


def test_the_unpack_command_takes_a_datasets_folder(tmp_path: Path) -> None:
    groups = sorted(p.relative_to(RUNS).as_posix() for p in RUNS.glob("*/*") if p.is_dir())
    dataset = tmp_path / "dataset"
    pack(RUNS, dataset / "raw.tar.xz", only=groups[:3])
    pack(RUNS, dataset / "paper-A.tar.xz", only=groups[3:])
    done = subprocess.run([sys.executable, "-m", "quicack.layout.archive", "unpack", str(dataset),
                           str(tmp_path / "raw")], capture_output=True, text=True, encoding="utf-8",
                          check=True)  # fmt: skip
    assert "raw.tar.xz + paper-A.tar.xz" in done.stdout
    assert _contents(tmp_path / "raw") == _contents(RUNS)


def test_a_part_packed_by_kind_holds_the_same_files_grouped_by_kind_and_the_same_bytes_again(tmp_path: Path) -> None:
    """quicack.testbed.parts packs with PART_XZ_FILTERS (lc 4, pb 0) and the files of one kind side by side: the
    recorded loopback runs come back file for file, the members are qlogs, then run.json, then the rest, and packing
    again gives the same bytes."""
    import lzma
    import tarfile

    from quicack.testbed.parts import PART_XZ_FILTERS

    first, again = tmp_path / "a" / "part-X.tar.xz", tmp_path / "b" / "part-X.tar.xz"
    assert pack(LOOPBACK, first, filters=PART_XZ_FILTERS, by_kind=True) == len(_contents(LOOPBACK))
    pack(LOOPBACK, again, filters=PART_XZ_FILTERS, by_kind=True)
    assert first.read_bytes() == again.read_bytes()
    with lzma.open(first) as xz, tarfile.open(fileobj=xz) as tar:
        names = [member.name.rsplit("/", 1)[-1] for member in tar.getmembers()]
    kinds = [0 if ".qlog" in name or ".sqlog" in name else 1 if name == "run.json" else 2 for name in names]
    assert kinds == sorted(kinds) and {0, 1, 2} <= set(kinds)
    unpack(first, tmp_path / "raw")
    assert _contents(tmp_path / "raw") == _contents(LOOPBACK)
