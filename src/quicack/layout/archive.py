"""A raw folder as one archive, the way the embedded dataset is kept in git (``data/sample/raw.tar.xz``, stored as
parts ``raw.tar.xz.00``, ``.01``, ... of at most 9 MB each).

Thousands of small run files cost a file-system block and a folder entry each, and every gzip stream is compressed
on its own; one xz stream over the whole folder, with each ``.gz`` file stored decompressed, shares what runs have
in common (headers, handshakes, qlog keys): the embedded 68.5 MB of files become 46.0 MB. ``install.sh`` unpacks it, the
``.gz`` files compressed again (gzip level 9, no timestamp), into the user's cache
(``$XDG_CACHE_HOME/quicack/<archive sha256>/raw``, default ``~/.cache``: shared by every checkout of the same
archive, outside the repository) and links ``data/sample/raw`` to it (git ignores that link), so the pipeline, the
tests and the testbed see the usual raw layout (quicack.layout.runs) at the usual path while ``data/`` holds only
what git tracks.

    python -m quicack.layout.archive unpack --cached data/sample data/sample/raw     # every archive of data/sample
    python -m quicack.layout.archive unpack data/sample/raw.tar.xz /some/folder       # a plain folder, no cache
    python -m quicack.layout.archive pack data/sample/raw data/sample/raw.tar.xz    # after recording more runs

A dataset may be kept as several archives in one folder, unpacked into one raw folder: ``raw.tar.xz`` (first, where
there is one) and the whole parts of a recording made over several sessions (``data/paper/part-A1.tar.xz``, ...:
quicack.testbed.parts packs them), so that adding runs adds an archive to git instead of rewriting the whole
dataset's. No file may be in two of them.

``unpack`` leaves a raw folder alone that it did not make (a folder of one's own recordings) and one it made from
this very archive, whole; a marker file, written last, records which archive a folder came from and every file it
holds with its size. It unpacks into a staging folder and renames that into place once every file is there: a
killed unpack is never taken for the dataset, and the next run starts it again.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import lzma
import os
import shutil
import sys
import tarfile
from collections.abc import Iterable, Sequence
from glob import escape as glob_escape
from pathlib import Path, PurePosixPath

GZIP_SUFFIX = ".gz"
BASE_ARCHIVE = "raw.tar.xz"  # a dataset's first archive; whole parts of later recordings are kept beside it
# PAX header of a member that was a .gz file: unpack compresses it again under its old name.
GZIPPED_HEADER = "QUICACK.gzipped"
MARKER = ".unpacked-from"  # in the raw folder: the sha256 of the archive it was unpacked from
# Level 9 (64 MiB dictionary: runs share it). Not PRESET_EXTREME: on the embedded dataset (500 MB once its .gz files
# are stored decompressed) extreme took over an hour on one core for about 3 % less (measured on one group: 22.8 s vs
# 5.0 s, 4.55 vs 4.68 MB).
XZ_PRESET = 9
# An archive larger than this is stored as numbered parts, <archive>.00, .01, ...: git hosts and reviewers balk at
# single files over 10 MB. The parts concatenated are the archive, byte for byte.
PART_BYTES = 9_000_000


class ArchiveError(ValueError):
    """The archive cannot be read or would write outside the raw folder."""


def dataset_archives(folder: Path) -> list[Path]:
    """The archives kept in ``folder`` (each ``*.tar.xz`` whole or as numbered parts): ``raw.tar.xz`` first, then the
    others by name."""
    names = {path.name.rsplit(".", 1)[0] if path.suffix[1:].isdigit() else path.name
             for path in folder.glob("*.tar.xz*") if path.name.endswith(".tar.xz") or path.suffix[1:].isdigit()}
    return [folder / name for name in sorted(names, key=lambda name: (name != BASE_ARCHIVE, name))]


def _archive_list(archives: Path | Sequence[Path]) -> list[Path]:
    return [archives] if isinstance(archives, Path) else list(archives)


def parts(archive: Path) -> list[Path]:
    """The files that hold ``archive``: itself, or its numbered parts in order (none if neither exists)."""
    if archive.is_file():
        return [archive]
    return sorted(archive.parent.glob(archive.name + ".[0-9][0-9]"))


class _Concatenated(io.RawIOBase):
    """The parts of an archive read as one stream."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = list(paths)
        self.current: io.BufferedReader | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]  # IOBase's takes any Buffer
        while True:
            if self.current is None:
                if not self.paths:
                    return 0
                self.current = self.paths.pop(0).open("rb")
            count = self.current.readinto(buffer)
            if count:
                return count
            self.current.close()
            self.current = None

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
        super().close()


def _open_parts(archive: Path) -> io.BufferedReader:
    found = parts(archive)
    if not found:
        raise FileNotFoundError(f"{archive}: no such archive (nor its parts {archive.name}.00, ...)")
    return io.BufferedReader(_Concatenated(found), 1 << 20)


def archive_sha256(archive: Path) -> str:
    """The sha256 of ``archive``, of its stored parts concatenated where it is kept in parts."""
    with _open_parts(archive) as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def _identity(archives: list[Path]) -> str:
    """What a raw folder's marker names: one archive's sha256, or the sha256 of the archives' sha256s in order."""
    digests = [archive_sha256(archive) for archive in archives]
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


def _names(archives: list[Path]) -> str:
    return " + ".join(archive.name for archive in archives)


def _split(archive: Path, part_bytes: int) -> None:
    """Store a finished ``archive`` as numbered parts if it is larger than ``part_bytes``."""
    for old in archive.parent.glob(archive.name + ".[0-9][0-9]"):  # the parts of an earlier pack
        old.unlink()
    if archive.stat().st_size <= part_bytes:
        return
    with archive.open("rb") as whole:
        for number, block in enumerate(iter(lambda: whole.read(part_bytes), b"")):
            archive.with_name(f"{archive.name}.{number:02d}").write_bytes(block)
    archive.unlink()


def kind_order(relative: PurePosixPath) -> tuple[int, str]:
    """Sort key that puts files of one kind next to each other (qlogs, then run.json, then the rest; by path within
    a kind): the compressor's window then holds the previous runs' file of the same kind. On part A1 (2,400 runs)
    2.18 → 2.13 MB against path order, at xz's extreme level."""
    name = relative.name
    kind = 0 if ".qlog" in name or ".sqlog" in name else 1 if name == "run.json" else 2
    return kind, relative.as_posix()


def pack(raw: Path, archive: Path, preset: int = XZ_PRESET, part_bytes: int = PART_BYTES,
         only: Iterable[str] | None = None, filters: list[dict] | None = None, by_kind: bool = False) -> int:
    """Write every file below ``raw`` (when ``only`` is given, only those paths relative to ``raw``: folders, with
    every file below them, or files) into ``archive`` (sorted by path, or by ``kind_order`` when ``by_kind``; no
    owners or times: the same folder gives the same bytes), ``.gz`` files decompressed, in parts of ``part_bytes`` if
    larger; returns the number of files. ``filters``: an xz filter chain instead of ``preset``."""
    roots = [raw] if only is None else [raw / path for path in only]
    missing = [root for root in roots if not root.exists()]
    if missing:
        raise ArchiveError(f"{missing[0]}: nothing there to pack")
    found = {p for root in roots for p in ([root] if root.is_file() else root.rglob("*"))}
    files = sorted((p for p in found if p.is_file() and p.name != MARKER),
                   key=(lambda p: kind_order(PurePosixPath(p.relative_to(raw).as_posix()))) if by_kind else None)
    partial = archive.with_name(archive.name + ".partial")
    archive.parent.mkdir(parents=True, exist_ok=True)
    with (
        (lzma.open(partial, "wb", filters=filters) if filters else lzma.open(partial, "wb", preset=preset)) as xz,
        tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path in files:
            name = path.relative_to(raw).as_posix()
            data = path.read_bytes()
            info = tarfile.TarInfo(name)
            if name.endswith(GZIP_SUFFIX):
                data = gzip.decompress(data)
                info.name = name[: -len(GZIP_SUFFIX)]
                info.pax_headers = {GZIPPED_HEADER: "1"}
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    partial.replace(archive)
    _split(archive, part_bytes)
    return len(files)


def unpack(archives: Path | Sequence[Path], raw: Path, owned: bool = False) -> str:
    """Unpack ``archives`` (one, or a dataset's several: ``dataset_archives``) into ``raw`` unless ``raw`` already
    holds them whole or holds runs of its own; what was done.

    The files are written into a staging folder beside ``raw`` and checked against the archive's members (every one
    there, with its size) before the marker, naming the archive and listing every file with its size, is written
    last and the folder renamed into place: a killed unpack leaves only a staging folder, which the next unpack
    removes, never a partial ``raw``. ``owned``: ``raw`` is quicack's own (the cache), so a folder there without a
    valid marker is a partial unpack of an earlier version and is replaced, not kept as someone's runs."""
    archives = _archive_list(archives)
    name = _names(archives)
    wanted = _identity(archives)
    state = unpacked_state(raw, wanted)
    if state == COMPLETE:
        return f"{raw} holds {name} already"
    if state == FOREIGN and not owned:
        return f"{raw} has runs not unpacked from {name}: left as it is"
    raw.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_staging(raw)
    staging = raw.with_name(f".{raw.name}{STAGING}{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        manifest: dict[str, int] = {}
        for archive in archives:
            manifest |= _extract(archive, staging, already=manifest)
        missing = _missing(staging, manifest)
        if missing:
            raise ArchiveError(f"{name}: {len(missing)} of {len(manifest)} files missing or of the wrong size "
                               f"after unpacking (first: {missing[0]})")
        (staging / MARKER).write_text(_marker_text(wanted, manifest), encoding="utf-8")  # last: the folder is complete
        _swap_in(staging, raw, wanted)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    repaired = "" if state == ABSENT else f" (replacing {'an incomplete' if state != STALE else 'an earlier'} unpack)"
    return f"unpacked {len(manifest)} files of {name} into {raw}{repaired}"


# What a folder is to `unpack`.
ABSENT, COMPLETE, STALE, INCOMPLETE, FOREIGN = "absent", "complete", "stale", "incomplete", "foreign"
STAGING = ".unpacking-"  # .<raw name>.unpacking-<pid>: an unpack in progress (or killed) beside the raw folder


def unpacked_state(raw: Path, sha256: str | None = None) -> str:
    """``absent`` (no folder or an empty one), ``complete`` (its marker names the archive ``sha256``, or any archive
    when None, and every file the marker lists is there with its size), ``stale`` (complete, of another archive),
    ``incomplete`` (a marker whose files are not all there) or ``foreign`` (files but no marker: runs of one's own,
    or an unpack killed by a version of quicack that did not stage it)."""
    if not raw.is_dir() or not any(raw.iterdir()):
        return ABSENT
    marker = raw / MARKER
    if not marker.is_file():
        return FOREIGN
    lines = marker.read_text(encoding="utf-8").splitlines()
    if not lines:
        return INCOMPLETE
    # A marker of one line (the archive's sha256) was written by earlier versions after their last file.
    manifest = dict(_manifest_entry(line) for line in lines[1:] if line.strip())
    if _missing(raw, manifest):
        return INCOMPLETE
    return COMPLETE if sha256 is None or lines[0].strip() == sha256 else STALE


def _marker_text(sha256: str, manifest: dict[str, int]) -> str:
    return sha256 + "\n" + "".join(f"{size}\t{name}\n" for name, size in sorted(manifest.items()))


def _manifest_entry(line: str) -> tuple[str, int]:
    size, _, name = line.partition("\t")
    return name, int(size)


def _missing(raw: Path, manifest: dict[str, int]) -> list[str]:
    """The files of ``manifest`` (relative path -> size) that are not in ``raw`` with that size."""
    missing = []
    for name, size in manifest.items():
        try:
            if (raw / name).stat().st_size != size:
                missing.append(name)
        except OSError:
            missing.append(name)
    return missing


def _extract(archive: Path, staging: Path, already: dict[str, int] | None = None) -> dict[str, int]:
    """Every member of ``archive`` into ``staging`` (``.gz`` members compressed again); relative path -> size.
    ``already``: the files earlier archives of the same dataset unpacked there; a member among them is an error (two
    archives would each say what the file holds)."""
    earlier = already or {}
    manifest: dict[str, int] = {}
    try:
        with _open_parts(archive) as stored, lzma.open(stored, "rb") as xz, \
                tarfile.open(fileobj=xz, mode="r|") as tar:
            for member in tar:
                path = PurePosixPath(member.name)
                if not member.isfile() or path.is_absolute() or ".." in path.parts or path.name == MARKER:
                    raise ArchiveError(f"{archive}: unexpected member {member.name!r}")
                stream = tar.extractfile(member)
                data = stream.read() if stream is not None else b""
                target = staging / path
                if member.pax_headers.get(GZIPPED_HEADER) == "1":
                    data, target = (
                        gzip.compress(data, compresslevel=9, mtime=0),
                        target.with_name(target.name + GZIP_SUFFIX),
                    )
                if target.relative_to(staging).as_posix() in earlier:
                    raise ArchiveError(f"{archive}: {member.name} is in an earlier archive of the dataset too")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                manifest[target.relative_to(staging).as_posix()] = len(data)
    except (lzma.LZMAError, tarfile.TarError, EOFError) as error:
        raise ArchiveError(f"{archive}: damaged archive ({error}); {len(manifest)} files unpacked before it, "
                           "none kept") from error
    return manifest


def _swap_in(staging: Path, raw: Path, sha256: str) -> None:
    """Rename the complete ``staging`` folder to ``raw``; what was at ``raw`` (a stale or incomplete unpack) is moved
    aside first and removed after. Another unpack that got there first with the same archive wins."""
    try:
        os.rename(staging, raw)  # an absent or empty raw folder
        return
    except OSError:
        if unpacked_state(raw, sha256) == COMPLETE:  # a concurrent unpack of the same archive finished first
            return
    old = raw.with_name(f".{raw.name}.replaced-{os.getpid()}")
    os.rename(raw, old)
    os.rename(staging, raw)
    shutil.rmtree(old, ignore_errors=True)


def _remove_abandoned_staging(raw: Path) -> None:
    """Staging folders of unpacks that were killed (their process is gone)."""
    for folder in raw.parent.glob(f".{glob_escape(raw.name)}{STAGING}*"):
        pid = folder.name.rpartition("-")[2]
        if not pid.isdigit() or not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_raw(raw: Path, cache: Path | None = None) -> str | None:
    """Why ``raw`` cannot be read as an unpacked archive, or None: an incomplete unpack (files its marker lists are
    missing), or a folder in the cache (default `cache_root`) without a marker (an unpack killed before it
    finished by a version that did not stage it)."""
    state = unpacked_state(raw)
    if state == INCOMPLETE:
        return f"{raw} is an incomplete unpack (files listed in its {MARKER} are missing or cut)"
    if state == FOREIGN and (cache or cache_root()).resolve() in raw.resolve().parents:
        return f"{raw} is an unpack in the cache that did not finish (no {MARKER})"
    return None


def cache_root() -> Path:
    """Where unpacked archives are kept: ``$XDG_CACHE_HOME/quicack``, default ``~/.cache/quicack``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "quicack"


def unpack_cached(archives: Path | Sequence[Path], link: Path, cache: Path | None = None) -> str:
    """Unpack ``archives`` into ``<cache>/<their sha256>/raw`` (once for all checkouts) and make ``link`` a symbolic
    link to it. ``link`` as a real folder is replaced only when it is an earlier unpack of an archive (its marker);
    a folder of one's own runs is left alone."""
    archives = _archive_list(archives)
    target = (cache or cache_root()) / _identity(archives)[:32] / "raw"
    if link.is_dir() and not link.is_symlink():
        if not (link / MARKER).is_file():
            return f"{link} has runs not unpacked from {_names(archives)}: left as it is"
        shutil.rmtree(link)  # an unpack in place (before the cache): the cached copy replaces it
    done = unpack(archives, target, owned=True)
    if link.is_symlink() and link.readlink() == target:
        return done
    link.unlink(missing_ok=True)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)
    return f"{done}; {link} -> {target}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pack", help="a raw folder -> one .tar.xz")
    p.add_argument("raw", type=Path)
    p.add_argument("archive", type=Path)
    u = commands.add_parser("unpack",
                            help="archives -> one raw folder (left alone when it holds them or runs of its own)")
    u.add_argument("archives", type=Path, nargs="+",
                   help="each a .tar.xz or a folder of them (a dataset's: raw.tar.xz and its later parts)")
    u.add_argument("raw", type=Path)
    u.add_argument("--cached", action="store_true", help="unpack into the user's cache and make RAW a link to it")
    args = parser.parse_args(argv)
    try:
        if args.command == "pack":
            print(f"packed {pack(args.raw, args.archive)} files of {args.raw} into {args.archive}")
        else:
            archives = [found for given in args.archives
                        for found in (dataset_archives(given) if given.is_dir() else [given])]
            if not archives:
                raise ArchiveError(f"no archive in {' '.join(map(str, args.archives))}")
            print(unpack_cached(archives, args.raw) if args.cached else unpack(archives, args.raw))
    except (ArchiveError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
