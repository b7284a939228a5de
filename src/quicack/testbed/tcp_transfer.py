"""The testbed's Linux TCP transfer: a server that sends one requested file over a plain TCP connection, and a
client that fetches it — the TCP side of the ACK-ratio study (papers ackfreq22, rethink, tcpquic compare the
return-path bytes of QUIC and Linux TCP downloads over the same emulated path).

    python -m quicack.testbed.tcp_transfer serve --host H --port P --www DIR --ready-file F
    python -m quicack.testbed.tcp_transfer fetch --download-dir DIR --timeout S tcp://H:P/FILE

The request is one line, the file's name; the server answers with the file's bytes and closes the connection, and
the client reads to the end and saves the body as ``download_dir / FILE`` (the testbed checks its hash). Nothing
else is on the wire: no TLS, no HTTP, so every TCP payload byte is the file. Congestion control, delayed ACKs,
SACK and timestamps are the kernel's defaults (cubic; quick ACKs at the start, then an ACK per two full segments
or after the delayed-ACK timer); the testbed sets the ACK ratio from outside (``quickack`` route, router ACK
thinning: quicack.testbed.run).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

URL_SCHEME = "tcp"
MAX_REQUEST_BYTES = 1024


def _read_request(connection: socket.socket) -> str:
    request = b""
    while not request.endswith(b"\n") and len(request) < MAX_REQUEST_BYTES:
        chunk = connection.recv(MAX_REQUEST_BYTES - len(request))
        if not chunk:
            break
        request += chunk
    return request.decode("ascii", errors="replace").strip()


def _served_file(www: Path, name: str) -> Path | None:
    """The file `name` directly inside `www`, or None (no paths outside it)."""
    path = www / name
    return path if name and "/" not in name and name not in (".", "..") and path.is_file() else None


def serve(host: str, port: int, www: Path, ready_file: Path | None) -> None:
    """Answer connections one after the other until SIGTERM: read a file name, send the file, close."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(8)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    if ready_file is not None:
        ready_file.parent.mkdir(parents=True, exist_ok=True)
        ready_file.write_text(json.dumps({"host": host, "port": port, "pid": os.getpid()}) + "\n", encoding="utf-8")
    print(json.dumps({"ready": True, "host": host, "port": port}), flush=True)
    while True:
        connection, peer = listener.accept()
        with connection:
            name = _read_request(connection)
            path = _served_file(www, name)
            if path is None:
                print(json.dumps({"peer": list(peer), "request": name, "error": "no such file"}), flush=True)
                continue
            with path.open("rb") as body:
                sent = connection.sendfile(body)
            print(json.dumps({"peer": list(peer), "request": name, "sent_bytes": sent}), flush=True)


def fetch(url: str, download_dir: Path, timeout_s: float) -> dict[str, Any]:
    """Download ``tcp://host:port/name`` into ``download_dir / name``; what happened, as a dict."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if parts.scheme != URL_SCHEME or not parts.hostname or not parts.port or not name or "/" in name:
        raise ValueError(f"expected {URL_SCHEME}://<host>:<port>/<file>, got {url!r}")
    download_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    received = 0
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout_s) as connection:
        connection.sendall(name.encode("ascii") + b"\n")
        with (download_dir / name).open("wb") as out:
            while chunk := connection.recv(1 << 16):
                out.write(chunk)
                received += len(chunk)
                if time.monotonic() - started > timeout_s:
                    raise TimeoutError(f"transfer not finished after {timeout_s:g} s ({received} B received)")
    return {"url": url, "received_bytes": received, "duration_s": round(time.monotonic() - started, 6)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="plain TCP file transfer of the quicack testbed")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve files of --www, one request line per connection")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--www", type=Path, required=True)
    s.add_argument("--ready-file", type=Path)
    f = sub.add_parser("fetch", help="download tcp://host:port/file")
    f.add_argument("--download-dir", type=Path, required=True)
    f.add_argument("--timeout", type=float, default=30.0, help="seconds for the whole transfer")
    f.add_argument("url")
    a = ap.parse_args(argv)
    if a.command == "serve":
        serve(a.host, a.port, a.www, a.ready_file)
        return 0
    try:
        print(json.dumps(fetch(a.url, a.download_dir, a.timeout)), flush=True)
    except (OSError, ValueError) as error:
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
