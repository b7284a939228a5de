"""NSS key log files (SSLKEYLOGFILE format) to TLS 1.3 traffic secrets per client random.

Keylogs as the field writes them: the NSS labels, and the `QUIC_`-prefixed ones of the draft era (aioquic up to
0.9.7, ngtcp2, quicly and Node.js wrote `QUIC_CLIENT_HANDSHAKE_TRAFFIC_SECRET`, `QUIC_SERVER_TRAFFIC_SECRET_0`, …
for the same secrets; some wrote both), CRLF line ends, comments, blank lines and the secrets of other connections
or of TLS 1.2 (kept aside, counted). A line that is not a key log line is a problem (an ingest issue), not a
reason to stop.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# Labels of the TLS 1.3 secrets QUIC uses, per packet number space and sender.
CLIENT_EARLY = "CLIENT_EARLY_TRAFFIC_SECRET"
CLIENT_HANDSHAKE = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
SERVER_HANDSHAKE = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
CLIENT_APPLICATION = "CLIENT_TRAFFIC_SECRET_0"
SERVER_APPLICATION = "SERVER_TRAFFIC_SECRET_0"
KNOWN_LABELS = frozenset({CLIENT_EARLY, CLIENT_HANDSHAKE, SERVER_HANDSHAKE, CLIENT_APPLICATION, SERVER_APPLICATION})
# The draft era's names of the same secrets.
DRAFT_PREFIX = "QUIC_"
LABEL_ALIASES = {DRAFT_PREFIX + label: label for label in KNOWN_LABELS}


@dataclass
class Keylog:
    """Secrets by client random (32 bytes) and label; later lines for the same key win.

    `sources` counts the keylogs given (files, pcapng Decryption Secrets Blocks), so that "no keylog given" is said
    only when none was; `other_labels` counts the lines whose secrets QUIC does not use (TLS 1.2, exporter, ...).
    """

    secrets: dict[bytes, dict[str, bytes]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    sources: int = 0
    other_labels: Counter[str] = field(default_factory=Counter)

    def add_text(self, text: str, origin: str) -> None:
        self.add_lines(text.splitlines(), origin)

    def add_lines(self, lines: Iterable[str], origin: str) -> None:
        """`add_text` of the text whose `splitlines()` are `lines` (a file read line by line: `load_keylogs`)."""
        self.sources += 1
        for line_number, line in enumerate(lines, start=1):
            line = line.strip().lstrip("\ufeff")  # a byte order mark before the first line (Windows tools)
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 3:
                self.problems.append(f"{origin}:{line_number}: not '<LABEL> <client_random> <secret>'")
                continue
            label, random_hex, secret_hex = parts
            label = LABEL_ALIASES.get(label, label)
            if label not in KNOWN_LABELS:
                self.other_labels[label] += 1  # TLS 1.2 / exporter / later key phases: not needed for QUIC
                continue
            try:
                client_random, secret = bytes.fromhex(random_hex), bytes.fromhex(secret_hex)
            except ValueError:
                self.problems.append(f"{origin}:{line_number}: hex expected")
                continue
            if len(client_random) != 32 or len(secret) not in (32, 48):
                self.problems.append(f"{origin}:{line_number}: wrong field length")
                continue
            self.secrets.setdefault(client_random, {})[label] = secret

    def merge(self, later: Keylog) -> None:
        """Add what `later` read, as if its lines came after this one's (later lines for the same key win)."""
        if not self.secrets:
            self.secrets = later.secrets
        else:
            for client_random, entry in later.secrets.items():
                self.secrets.setdefault(client_random, {}).update(entry)
        self.problems += later.problems
        self.sources += later.sources
        self.other_labels.update(later.other_labels)

    def get(self, client_random: bytes | None, label: str) -> bytes | None:
        if client_random is None:
            return None
        entry = self.secrets.get(client_random)
        return entry.get(label) if entry else None

    def __len__(self) -> int:
        return len(self.secrets)

    def without_secrets(self) -> str:
        """Why the keylogs given hold no QUIC secrets (for the message of a packet not decrypted)."""
        if not self.sources:
            return "no keylog given"
        if self.other_labels:
            labels = ", ".join(f"{label} ({count})" for label, count in self.other_labels.most_common(4))
            return f"the keylog holds no TLS 1.3 traffic secrets QUIC uses (only {labels})"
        return "the keylog holds no secrets (empty, or no line could be read)"


def load_keylogs(paths: list[Path]) -> Keylog:
    """Merge keylog files (e.g. client/keys.log and server/keys.log), plain or gzip/zstd-compressed (scanner
    outputs keep ``key.log.zst``); unreadable files become problems."""
    from .capture_file import open_capture  # decompresses by magic number, as for captures

    keylog = Keylog()
    for path in paths:
        # Read line by line, not as one text: a scan's key log is ~640 bytes per connection, and its text, decoded
        # text and list of lines at once were ~4x that at the start of a decode (~280 MB per 100,000 connections).
        # Into a Keylog of its own, so that a file that cannot be read to its end adds nothing, as before.
        read = Keylog()
        try:
            with open_capture(Path(path)) as stream:
                lines = io.TextIOWrapper(stream, encoding="utf-8", errors="replace")  # universal newlines
                # str.splitlines() ends lines at more characters than \n, \r and \r\n: split them alike
                read.add_lines((piece for line in lines for piece in line.splitlines()), str(path))
        except Exception as error:  # noqa: BLE001 - OSError, or a corrupt compressed file: a problem, not a crash
            keylog.sources += 1
            keylog.problems.append(f"{path}: cannot read keylog: {error}")
            continue
        keylog.merge(read)
    return keylog
