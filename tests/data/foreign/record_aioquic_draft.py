"""Record a real connection of an old aioquic release (one that speaks a QUIC draft) on loopback.

Run it with the Python of a virtual environment holding that release from PyPI (how the draft captures here were
made, see SOURCES.md), as root (tcpdump on PATH):

    python3 -m venv /tmp/aq0.8.4 && /tmp/aq0.8.4/bin/pip install aioquic==0.8.4
    /tmp/aq0.8.4/bin/python record_aioquic_draft.py OUTDIR --draft 23 --port 5701 --bytes 30000 [--key-update] [--retry]

An aioquic client and server in one process (hq; the server answers a request with N bytes), both speaking only the
draft given. Writes OUTDIR/capture.pcap (tcpdump on lo), OUTDIR/keys.log (both endpoints' secrets, as that release
labels them) and OUTDIR/client.qlog, OUTDIR/server.qlog (that release's QuicLogger: qlog draft-01). It uses only
the API the releases 0.7 to 0.9 share.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import inspect
import json
import os
import signal
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import StreamDataReceived
from aioquic.quic.logger import QuicLogger
from aioquic.quic.packet import QuicProtocolVersion
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def make_certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2)).sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class FileServer(QuicConnectionProtocol):
    response_bytes = 0

    def quic_event_received(self, event) -> None:
        if isinstance(event, StreamDataReceived) and event.end_stream:
            self._quic.send_stream_data(event.stream_id, b"x" * self.response_bytes, end_stream=True)
            self.transmit()


class FileClient(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.received = 0
        self.done = asyncio.Event()
        self.key_update_at = None

    def quic_event_received(self, event) -> None:
        if isinstance(event, StreamDataReceived):
            self.received += len(event.data)
            if self.key_update_at is not None and self.received >= self.key_update_at:
                self.key_update_at = None
                self._quic.request_key_update()
            if event.end_stream:
                self.done.set()


def configuration(is_client: bool, version, secrets, logger) -> QuicConfiguration:
    config = QuicConfiguration(is_client=is_client, alpn_protocols=[f"hq-{version & 0xff}"], secrets_log_file=secrets,
                               quic_logger=logger)
    config.supported_versions = [version]
    if is_client:
        config.verify_mode = ssl.CERT_NONE
    return config


async def run(args: argparse.Namespace, out: Path, cert: Path, key: Path) -> int:
    version = QuicProtocolVersion(0xFF000000 + args.draft) if args.draft else QuicProtocolVersion.VERSION_1
    server_logger, client_logger = QuicLogger(), QuicLogger()
    with (out / "keys.log").open("a", encoding="utf-8") as secrets:
        server_config = configuration(False, version, secrets, server_logger)
        if hasattr(server_config, "load_cert_chain"):
            server_config.load_cert_chain(cert, key)
        else:  # aioquic < 0.8: the certificate and key objects themselves
            server_config.certificate = x509.load_pem_x509_certificate(cert.read_bytes())
            server_config.private_key = serialization.load_pem_private_key(key.read_bytes(), password=None)
        FileServer.response_bytes = args.bytes
        retry = "retry" if "retry" in inspect.signature(serve).parameters else "stateless_retry"
        server = await serve("127.0.0.1", args.port, configuration=server_config, create_protocol=FileServer,
                             **{retry: args.retry})
        async with connect("127.0.0.1", args.port, configuration=configuration(True, version, secrets, client_logger),
                           create_protocol=FileClient) as client:
            if args.key_update:
                client.key_update_at = args.bytes // 2
            stream_id = client._quic.get_next_available_stream_id()
            client._quic.send_stream_data(stream_id, b"GET /file\r\n", end_stream=True)
            client.transmit()
            await asyncio.wait_for(client.done.wait(), timeout=30)
            received = client.received
        await asyncio.sleep(0.3)
        server.close()
    for name, logger in (("client", client_logger), ("server", server_logger)):
        (out / f"{name}.qlog").write_text(json.dumps(logger.to_dict()), encoding="utf-8")
    return 0 if received == args.bytes else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--draft", type=int, default=0, help="draft number (0: version 1)")
    parser.add_argument("--port", type=int, default=5701)
    parser.add_argument("--bytes", type=int, default=30_000)
    parser.add_argument("--key-update", action="store_true")
    parser.add_argument("--retry", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "keys.log").unlink(missing_ok=True)
    capture = args.out / "capture.pcap"
    tcpdump = subprocess.Popen(["tcpdump", "-i", "lo", "--immediate-mode", "-U", "-s", "0", "-w", str(capture),
                                f"udp port {args.port}"], stderr=subprocess.PIPE)
    tcpdump.stderr.readline()  # "listening on ...": from here on it captures
    time.sleep(0.2)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = make_certificate(Path(tmp))
            status = asyncio.run(run(args, args.out, cert, key))
        time.sleep(0.5)
    finally:
        os.kill(tcpdump.pid, signal.SIGINT)
        print(tcpdump.communicate()[1].decode().strip())
    print(f"{capture}: {capture.stat().st_size} bytes, status {status}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
