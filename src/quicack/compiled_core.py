"""The compiled core (rust/quicack_core) as the workflow sees it: which build is installed, which build the checkout's
sources would make, and what the capture decoder and the qlog reader run.

A build's identity is its version and a hash of the sources it was built from ("0.1.0+1a2b3c4d5e6f7a8b"), recorded
by its build script (rust/quicack_core/build_identity.rs) and compiled in: `quicack_core.build_identity()`.
`source_identity` computes the same from the checkout (the same files, the same hash; tests/test_compiled_core.py
checks they agree). The jobs that use the core (ingest, scan) take `engine_identity()` as a parameter, so a rebuilt
core re-runs them; `stale_core_warning` says when the installed build is not the one the sources make.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

# The crate in the checkout this package is used from (src/quicack/compiled_core.py -> ../../rust/quicack_core).
CRATE = Path(__file__).resolve().parents[2] / "rust" / "quicack_core"
# A path literal in a Rust source that leaves its folder: data the build embeds (build_identity.rs reads the same).
# Printable ASCII only: the crate's files are named so, and a literal like "../…" (in a comment) names no file and
# could not even be looked up under a locale whose file-system encoding lacks the character.
_OUTSIDE_LITERAL = re.compile(r'"(\.\./[ !#-~]*)"')


def source_files(crate: Path = CRATE) -> list[Path]:
    """Every file the identity covers, once each: the crate folder's files but target/ and hidden ones, and the files
    outside it its .rs files name by a "../…" literal (from the file's folder, as include_str! does, or from the
    crate's, as a build script does)."""
    files = [
        path
        for path in crate.rglob("*")
        if path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(crate).parts)
        and path.relative_to(crate).parts[0] != "target"
    ]
    found = {path.resolve() for path in files}
    for rust in (path for path in files if path.suffix == ".rs"):
        for literal in _OUTSIDE_LITERAL.findall(rust.read_text(encoding="utf-8", errors="replace")):
            for base in (rust.parent, crate):
                candidate = (base / literal).resolve()
                if candidate.is_file():
                    found.add(candidate)
    return sorted(found)


def source_hash(files: list[Path]) -> str:
    """SHA-256 over the sorted SHA-256 digests of the files' contents, one per line: independent of where the
    checkout is."""
    digests = sorted(hashlib.sha256(path.read_bytes()).hexdigest() for path in files)
    return hashlib.sha256("".join(f"{digest}\n" for digest in digests).encode()).hexdigest()


def source_identity(crate: Path = CRATE) -> str | None:
    """The identity a build of the checkout's sources has; None without the crate (quicack installed elsewhere)."""
    if not (crate / "Cargo.toml").is_file():
        return None
    version = tomllib.loads((crate / "Cargo.toml").read_text(encoding="utf-8"))["package"]["version"]
    return f"{version}+{source_hash(source_files(crate))[:16]}"


# What an installed core built before identities were recorded reports.
UNKNOWN_BUILD = "unknown build (built before its build identity was recorded)"


def installed_identity() -> str | None:
    """The installed build's identity; None when quicack_core is not installed."""
    try:
        import quicack_core
    except ImportError:
        return None
    identity = getattr(quicack_core, "build_identity", None)
    return identity() if identity is not None else UNKNOWN_BUILD


def engine_identity() -> str:
    """What the capture decoder and the qlog reader run here, as the jobs that use them will (QUICACK_PCAP_ENGINE and
    QUICACK_QLOG_ENGINE included): "pcap compiled, qlog compiled: quicack_core 0.1.0+…", or "pcap python, qlog python"
    (the pure-Python engine, whose code is among the jobs' code inputs). A changed value re-runs those jobs."""
    from quicack.pcap.decoder_engine import select_engine
    from quicack.qlog.reader_engine import lane_class

    engines = {"pcap": select_engine().name, "qlog": "compiled" if lane_class() is not None else "python"}
    used = ", ".join(f"{reader} {engine}" for reader, engine in engines.items())
    if "compiled" not in engines.values():
        return used
    return f"{used}: quicack_core {installed_identity()}"


def stale_core_warning(crate: Path = CRATE) -> str | None:
    """A warning when the installed core is not the build the checkout's sources make (they changed since it was
    built, or it was built from another checkout); None when it is, or when there is no core or no crate."""
    installed, sources = installed_identity(), source_identity(crate)
    if installed is None or sources is None or installed == sources:
        return None
    return (
        f"the installed quicack_core ({installed}) is not built from {crate} as it is now ({sources}): captures and "
        f"qlogs are decoded by the old build. Rebuild it: pip install {crate} (or bash install.sh)"
    )
