"""Served files: random bytes from a fixed seed, so every run and every machine serves the same content."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

# Sizes in bytes; names as in the imc24 artifact's folder names (file_size=10KB, ...). KiB/MiB as the QIR does.
FILE_SIZES: dict[str, int] = {
    "10KB": 10 * 1024,
    "200KB": 200 * 1024,
    "1MB": 1024 * 1024,
    # rethink's 10 MB transfer scaled down for the long 1 % loss runs (labelled so in the figures).
    "2MB": 2 * 1024 * 1024,
    "10MB": 10 * 1024 * 1024,
    # Long enough that a sender's slow-start overshoot on the fast ackfreq22 paths (4G, VDSL) is a small part of it.
    "30MB": 30 * 1024 * 1024,
}
SEED = 20240424


@dataclass(frozen=True)
class ServedFile:
    name: str
    size_bytes: int
    sha256: str
    path: Path


def file_bytes(name: str) -> bytes:
    """Content of file `name`; a seed per name keeps files independent of each other."""
    rng = random.Random(f"{SEED}:{name}")
    return rng.randbytes(FILE_SIZES[name])


def ensure_files(www: Path, names: list[str] | None = None) -> dict[str, ServedFile]:
    """Write the files into `www` (if missing or wrong) and return their descriptions."""
    www.mkdir(parents=True, exist_ok=True)
    out: dict[str, ServedFile] = {}
    for name in names or list(FILE_SIZES):
        data = file_bytes(name)
        digest = hashlib.sha256(data).hexdigest()
        path = www / name
        if not path.exists() or path.stat().st_size != len(data) or sha256_file(path) != digest:
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        out[name] = ServedFile(name, len(data), digest, path)
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
