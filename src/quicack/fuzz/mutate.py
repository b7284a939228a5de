"""Mutations of seed files: what damaged disks, cut transfers, buggy loggers and hostile authors produce.

``mutated_input(seeds, reader, seed, number)`` is a pure function of its arguments, so a crash found by input
``number`` is reproduced by asking for that number again.
"""

from __future__ import annotations

import gzip
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import zstandard

from .corpus import Seed

# Numbers that broke readers or the tables' int64/float64 columns.
CRAFTED_NUMBERS = (
    b"9223372036854775808", b"18446744073709551615", b"18446744073709551616", b"-9223372036854775809",
    b"1e308", b"-1e308", b"1e400", b"-0", b"-0.0", b"0.0000001", b'"NaN"', b'"Infinity"', b'"-inf"', b"NaN",
    b"1" * 5000, b"4294967295", b"2147483648", b'"12"', b"null", b"true", b"[]", b"{}",
)
# 32-bit values for the length and count fields of captures.
CRAFTED_WORDS = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFF0, 0x10000, 0x4000001, 12, 13)
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class FuzzInput:
    number: int
    data: bytes
    suffix: str  # what the file is named as, so that the reader takes it as the seed's kind
    keylog: Path | None
    mutations: tuple[str, ...]


@cache
def _plain(path: Path) -> bytes:
    """A seed's bytes, decompressed: mutations act on the content; compression damage is a mutation of its own."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    if data[:4] == b"\x28\xb5\x2f\xfd":
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 30)
    return data


def _plain_suffix(seed: Seed) -> str:
    return "".join(s for s in seed.path.suffixes if s not in (".gz", ".zst", ".xz")) or ".bin"


def flip_bytes(data: bytes, rng: random.Random, seeds: list[Seed]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 16))):
        if out:
            out[rng.randrange(len(out))] ^= rng.randrange(1, 256)
    return bytes(out)


def truncate(data: bytes, rng: random.Random, seeds: list[Seed]) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def splice(data: bytes, rng: random.Random, seeds: list[Seed]) -> bytes:
    other = _plain(rng.choice(seeds).path)
    return data[: rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1) :]


def delete_or_repeat_range(data: bytes, rng: random.Random, seeds: list[Seed]) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    end = min(len(data), start + rng.choice((1, 3, 16, 200, 5000)))
    if rng.random() < 0.5:
        return data[:start] + data[end:]
    return data[:end] + data[start:end] * rng.choice((1, 2, 50)) + data[end:]


def crafted_number(data: bytes, rng: random.Random, seeds: list[Seed]) -> bytes:
    """Replace numbers of a qlog text by crafted ones; in a binary capture, overwrite 32-bit words."""
    numbers = [m.span() for m in _NUMBER.finditer(data, 0, min(len(data), 1 << 20))]
    if numbers and data[:1] in (b"{", b"\x1e", b"[", b" ", b"\n"):
        out = data
        for start, end in sorted(rng.sample(numbers, min(len(numbers), rng.choice((1, 1, 3)))), reverse=True):
            out = out[:start] + rng.choice(CRAFTED_NUMBERS) + out[end:]
        return out
    words = bytearray(data)
    for _ in range(rng.choice((1, 2))):
        if len(words) >= 4:
            at = rng.randrange(len(words) - 3) & ~3
            words[at : at + 4] = rng.choice(CRAFTED_WORDS).to_bytes(4, rng.choice(("little", "big")))
    return bytes(words)


def nest(data: bytes, rng: random.Random, seeds: list[Seed]) -> bytes:
    """Deeply nested arrays or objects as a new first member of a random object: the JSON stays valid, so the
    parser builds the whole depth (closed) or reads to the end of the record (not closed)."""
    depth = rng.choice((50, 500, 5_000, 200_000, 500_000))
    opener, innermost, closer = rng.choice(((b"[", b"", b"]"), (b'{"a":', b"1", b"}")))
    at = data.find(b'{"', rng.randrange(len(data) + 1)) + 1 if data else 0
    closing = closer * depth if rng.random() < 0.8 else b""
    return data[:at] + b'"deep":' + opener * depth + innermost + closing + b"," + data[at:]


MUTATIONS: dict[str, Callable[[bytes, random.Random, list[Seed]], bytes]] = {
    "flip": flip_bytes,
    "truncate": truncate,
    "splice": splice,
    "range": delete_or_repeat_range,
    "number": crafted_number,
    "nest": nest,
}


def _compress(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    if rng.random() < 0.5:
        return gzip.compress(data, compresslevel=1, mtime=0), ".gz"
    return zstandard.ZstdCompressor(level=1).compress(data), ".zst"


def _damage_compressed(data: bytes, rng: random.Random) -> bytes:
    """Flip, delete or cut inside the compressed stream (what the issue's zlib.error came from)."""
    if len(data) < 2:
        return data
    at = rng.randrange(len(data))
    kind = rng.randrange(3)
    if kind == 0:
        return data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1 :]
    if kind == 1:
        return data[:at] + data[at + 1 :]
    return data[:at]


def mutated_input(seeds: list[Seed], reader: str, seed: int, number: int) -> FuzzInput:
    rng = random.Random(f"{seed}:{reader}:{number}")
    chosen = rng.choice(seeds)
    data = _plain(chosen.path)
    applied = []
    names = list(MUTATIONS)
    if reader == "pcap":
        names.remove("nest")  # nesting means nothing to a binary capture
    for _ in range(rng.choice((1, 1, 2, 3))):
        name = rng.choice(names)
        data = MUTATIONS[name](data, rng, seeds)
        applied.append(name)
    suffix = _plain_suffix(chosen)
    if rng.random() < 0.3:
        data, compression = _compress(data, rng)
        suffix += compression
        if rng.random() < 0.6:
            data = _damage_compressed(data, rng)
            applied.append(f"damage{compression}")
    return FuzzInput(number, data, suffix, chosen.keylog, tuple(applied))
