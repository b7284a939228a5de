"""Open a file, transparently decompressing gzip, zstd or xz (by magic bytes), safely.

Every decompressor raises its own errors on damaged data (``zlib.error``, ``EOFError``, ``gzip.BadGzipFile``,
``lzma.LZMAError``, ``zstandard.ZstdError``). The stream returned here turns all of them into one
``CorruptCompressedData`` that says where, and only after it has handed out every byte it could decompress
before the damage, so a reader keeps the records before it. It also counts what it produces against
``Limits`` and raises ``DecompressionBomb`` / ``InputLimitExceeded`` early, before memory or time run out.
"""

from __future__ import annotations

import gzip
import io
import lzma
import zlib
from pathlib import Path
from typing import BinaryIO

import zstandard

from quicack.reading.limits import (
    BOMB_CHECK_AFTER_BYTES,
    DEFAULT_LIMITS,
    DecompressionBomb,
    InputLimitExceeded,
    Limits,
    config_key,
)

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
XZ_MAGIC = b"\xfd7zXZ\x00"

# Everything a decompressor raises on bad data. OSError covers gzip.BadGzipFile; ValueError a zstd frame
# header that names an impossible window.
DECOMPRESSION_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
    zstandard.ZstdError,
)


class CorruptCompressedData(Exception):
    """The compressed stream is damaged; everything before ``decompressed_offset`` was delivered."""

    def __init__(self, compression: str, decompressed_offset: int, error: BaseException) -> None:
        self.compression = compression
        self.decompressed_offset = decompressed_offset
        super().__init__(
            f"{compression} data damaged after {decompressed_offset} decompressed bytes "
            f"({_qualified_name(error)}: {error})"
        )


def _qualified_name(error: BaseException) -> str:
    """zlib.error rather than the bare 'error'; builtins unqualified."""
    kind = type(error)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def compression_of(magic: bytes) -> str | None:
    if magic.startswith(GZIP_MAGIC):
        return "gzip"
    if magic.startswith(ZSTD_MAGIC):
        return "zstd"
    if magic.startswith(XZ_MAGIC):
        return "xz"
    return None


class _GuardedStream(io.RawIOBase):
    """A decompressing stream with the guarantees of the module docstring."""

    PIECE_BYTES = 1 << 13  # a damaged stream loses at most this much before the damage

    def __init__(self, inner: BinaryIO, raw: BinaryIO, compression: str, limits: Limits) -> None:
        self.inner = inner
        self.raw = raw
        self.compression = compression
        self.limits = limits
        self.produced = 0
        self.pending_error: BaseException | None = None

    def read(self, size: int | None = -1) -> bytes:
        if self.pending_error is not None:
            error, self.pending_error = self.pending_error, None
            raise error
        remaining = size if size is not None and size >= 0 else 1 << 62
        pieces = []
        while remaining > 0:
            try:
                piece = self.inner.read(min(remaining, self.PIECE_BYTES))
            except DECOMPRESSION_ERRORS as error:
                self.pending_error = CorruptCompressedData(self.compression, self.produced, error)
                break
            if not piece:
                break
            self.produced += len(piece)
            remaining -= len(piece)
            pieces.append(piece)
            try:
                self._check_limits()
            except InputLimitExceeded as error:
                self.pending_error = error
                break
        if self.pending_error is not None and not pieces:
            pending, self.pending_error = self.pending_error, None
            raise pending
        return b"".join(pieces)

    def _check_limits(self) -> None:
        bound = self.limits.decompressed_bytes_bound
        if bound is not None and self.produced > bound:
            raise InputLimitExceeded(
                f"{self.compression} stream decompresses to more than {bound} bytes "
                f"({config_key('max_decompressed_bytes')})"
            )
        if self.produced > BOMB_CHECK_AFTER_BYTES:
            consumed = max(1, self.raw.tell())
            ratio = self.produced / consumed
            if ratio > self.limits.max_compression_ratio:
                raise DecompressionBomb(
                    f"decompression bomb: {consumed} {self.compression}-compressed bytes expanded to "
                    f"{self.produced} bytes (ratio {ratio:.0f}:1, limit {self.limits.max_compression_ratio:g}:1, "
                    f"{config_key('max_compression_ratio')}); reading stopped"
                )

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self.raw.close()
            super().close()


def open_input(path: Path, limits: Limits = DEFAULT_LIMITS) -> BinaryIO:
    """``path`` for binary reading; gzip, zstd and xz are decompressed through a guarded stream."""
    raw = open(path, "rb")  # noqa: SIM115 - returned to the caller, closed by it
    try:
        magic = raw.read(len(XZ_MAGIC))
        raw.seek(0)
        compression = compression_of(magic)
        if compression is None:
            return raw
        inner: BinaryIO
        if compression == "gzip":
            # GzipFile is binary, not typed BinaryIO
            inner = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        elif compression == "zstd":
            inner = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        else:
            inner = lzma.LZMAFile(raw, mode="rb")  # type: ignore[assignment]  # LZMAFile: as GzipFile
    except BaseException:
        raw.close()
        raise
    # a binary stream, not typed BinaryIO
    return _GuardedStream(inner, raw, compression, limits)  # type: ignore[return-value]
