"""Support for the test_pcap_* modules (no tests here): the real captures of the test data, decoded once per session."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from quicack.pcap.decode import decode_capture

DATA = Path(__file__).parent / "data"
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz", ".pcap.zst", ".pcapng.zst")


@dataclass(frozen=True)
class Capture:
    path: Path
    keylogs: tuple[Path, ...]

    @property
    def name(self) -> str:
        return str(self.path.relative_to(DATA))


def _is_capture(path: Path) -> bool:
    return path.is_file() and any(path.name.endswith(suffix) for suffix in CAPTURE_SUFFIXES)


# Fixtures whose datagrams not sent by the client were cut after recording (their READMEs).
CUT_BY_DIRECTION = ("ack_policy", "ack_receivers", "browser_acks")
TCP_ONLY = "tcp"  # tests/data/tcp: Linux TCP runs, no QUIC (test_tcp_segments.py reads them)


def find_captures(include_snaplen_cut: bool = False, root: Path = DATA, include_empty: bool = False) -> list[Capture]:
    """Every capture under `root` (tests/data) with its keylogs (those cut by a snap length on purpose and the
    empty ones only if asked).

    tests/data/pcap/<stem>.<ext> uses <stem>.keys.log; runs (loopback and testbed) use the run's
    client/keys.log and server/keys.log next to sim/.
    """
    captures = []
    for path in sorted(root.rglob("*")):
        if not _is_capture(path) or path.relative_to(root).parts[0] == TCP_ONLY:
            continue
        cut = "snaplen" in path.name or any(part in CUT_BY_DIRECTION for part in path.relative_to(root).parts)
        if cut and not include_snaplen_cut:
            # Cut by the snap length on purpose: it cannot decrypt everything; test_pcap_decode tests it alone.
            # tests/data/ack_policy and ack_receivers keep the client's ACKs whole but cut the server's datagrams to
            # 96 B after recording (their READMEs): test_ack_policy_receiver.py and test_ack_receivers.py read them.
            continue
        if path.stat().st_size == 0 and not include_empty:
            # A failed run's empty capture (tests/data/qir_as_found): nothing to account; test_ingest tests it.
            continue
        if path.parent.name == "sim":
            run = path.parent.parent
            keylogs = tuple(p for p in (run / "client" / "keys.log", run / "server" / "keys.log") if p.exists())
        else:
            keylog = path.parent / f"{path.name.split('.')[0]}.keys.log"
            keylogs = (keylog,) if keylog.exists() else ()
        captures.append(Capture(path, keylogs))
    return captures


@dataclass(frozen=True)
class Decoded:
    datagrams: pl.DataFrame
    packets: pl.DataFrame
    frames: pl.DataFrame
    ingest_issues: pl.DataFrame
    tcp_segments: pl.DataFrame


@functools.cache
def decode(capture: Capture) -> Decoded:
    batches = list(decode_capture(capture.path, list(capture.keylogs) or None, run_id=capture.name))
    return Decoded(
        *(
            pl.concat([getattr(b, name) for b in batches])
            for name in ("datagrams", "packets", "frames", "ingest_issues", "tcp_segments")
        )
    )
