"""NSS key log files (SSLKEYLOGFILE format) to TLS 1.3 traffic secrets per client random."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# Labels of the TLS 1.3 secrets QUIC uses, per packet number space and sender.
CLIENT_EARLY = "CLIENT_EARLY_TRAFFIC_SECRET"
CLIENT_HANDSHAKE = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
SERVER_HANDSHAKE = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
CLIENT_APPLICATION = "CLIENT_TRAFFIC_SECRET_0"
SERVER_APPLICATION = "SERVER_TRAFFIC_SECRET_0"
KNOWN_LABELS = frozenset({CLIENT_EARLY, CLIENT_HANDSHAKE, SERVER_HANDSHAKE, CLIENT_APPLICATION, SERVER_APPLICATION})


@dataclass
class Keylog:
    """Secrets by client random (32 bytes) and label; later lines for the same key win."""

    secrets: dict[bytes, dict[str, bytes]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add_text(self, text: str, origin: str) -> None:
        for line_number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 3:
                self.problems.append(f"{origin}:{line_number}: not '<LABEL> <client_random> <secret>'")
                continue
            label, random_hex, secret_hex = parts
            if label not in KNOWN_LABELS:
                continue  # TLS 1.2 / exporter secrets are not needed for QUIC
            try:
                client_random, secret = bytes.fromhex(random_hex), bytes.fromhex(secret_hex)
            except ValueError:
                self.problems.append(f"{origin}:{line_number}: hex expected")
                continue
            if len(client_random) != 32 or len(secret) not in (32, 48):
                self.problems.append(f"{origin}:{line_number}: wrong field length")
                continue
            self.secrets.setdefault(client_random, {})[label] = secret

    def get(self, client_random: bytes | None, label: str) -> bytes | None:
        if client_random is None:
            return None
        entry = self.secrets.get(client_random)
        return entry.get(label) if entry else None

    def __len__(self) -> int:
        return len(self.secrets)


def load_keylogs(paths: list[Path]) -> Keylog:
    """Merge keylog files (e.g. client/keys.log and server/keys.log), plain or gzip/zstd-compressed (scanner
    outputs keep ``key.log.zst``); unreadable files become problems."""
    from .capture_file import open_capture  # decompresses by magic number, as for captures

    keylog = Keylog()
    for path in paths:
        try:
            with open_capture(Path(path)) as stream:
                text = stream.read().decode(errors="replace")
        except Exception as error:  # noqa: BLE001 - OSError, or a corrupt compressed file: a problem, not a crash
            keylog.problems.append(f"{path}: cannot read keylog: {error}")
            continue
        keylog.add_text(text, str(path))
    return keylog
