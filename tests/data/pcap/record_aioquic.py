"""Record a real aioquic client/server run on loopback with its keylog (how the fixtures here were made).

Usage (root, tcpdump on PATH):
    python tests/data/pcap/record_aioquic.py OUTDIR --port 5433 --bytes 200000 [--v2] [--chacha]
        [--key-update] [--retry] [--ipv6] [--iface lo|any] [--linktype LINUX_SLL] [--datagram] [--zero-rtt]

Writes OUTDIR/capture.pcap (tcpdump) and OUTDIR/keys.log (SSLKEYLOGFILE format, both endpoints).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import signal
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import DatagramFrameReceived, StreamDataReceived
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import CipherSuite
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def make_certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class FileServer(QuicConnectionProtocol):
    """Answers any request on a stream with `response_bytes` bytes, then FIN; echoes DATAGRAM frames."""

    response_bytes = 0

    def quic_event_received(self, event) -> None:
        if isinstance(event, StreamDataReceived) and event.end_stream:
            self._quic.send_stream_data(event.stream_id, b"x" * self.response_bytes, end_stream=True)
            self.transmit()
        elif isinstance(event, DatagramFrameReceived):
            self._quic.send_datagram_frame(event.data)
            self.transmit()


class FileClient(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.received = 0
        self.done = asyncio.Event()
        self.key_update_at: int | None = None

    def quic_event_received(self, event) -> None:
        if isinstance(event, StreamDataReceived):
            self.received += len(event.data)
            if self.key_update_at is not None and self.received >= self.key_update_at:
                self.key_update_at = None
                self._quic.request_key_update()
            if event.end_stream:
                self.done.set()


async def run(args: argparse.Namespace, keylog: Path, cert: Path, key: Path) -> int:
    host = "::1" if args.ipv6 else "127.0.0.1"
    versions = [QuicProtocolVersion.VERSION_2] if args.v2 else [QuicProtocolVersion.VERSION_1]
    suites = [CipherSuite.CHACHA20_POLY1305_SHA256] if args.chacha else None
    with keylog.open("a") as secrets:
        server_config = QuicConfiguration(is_client=False, alpn_protocols=["hq-interop"], secrets_log_file=secrets)
        server_config.supported_versions = versions
        server_config.max_datagram_frame_size = 65536 if args.datagram else None
        if suites:
            server_config.cipher_suites = suites
        server_config.load_cert_chain(cert, key)
        FileServer.response_bytes = args.bytes
        tickets: dict[bytes, object] = {}
        server = await serve(
            host,
            args.port,
            configuration=server_config,
            create_protocol=FileServer,
            retry=args.retry,
            session_ticket_fetcher=tickets.pop,
            session_ticket_handler=lambda ticket: tickets.__setitem__(ticket.ticket, ticket),
        )
        client_tickets: list[object] = []
        # With --zero-rtt: a first connection fetches a session ticket, a second one resumes and sends its request as 0-RTT.
        received_all = True
        for connection_number in range(2 if args.zero_rtt else 1):
            client_config = QuicConfiguration(is_client=True, alpn_protocols=["hq-interop"], secrets_log_file=secrets)
            client_config.verify_mode = ssl.CERT_NONE
            client_config.supported_versions = versions
            client_config.max_datagram_frame_size = 65536 if args.datagram else None
            if suites:
                client_config.cipher_suites = suites
            if connection_number == 1:
                client_config.session_ticket = client_tickets[-1]
            async with connect(
                host,
                args.port,
                configuration=client_config,
                create_protocol=FileClient,
                session_ticket_handler=client_tickets.append,
                wait_connected=connection_number == 0,
            ) as client:
                if args.key_update:
                    client.key_update_at = args.bytes // 2
                if args.datagram:
                    client._quic.send_datagram_frame(b"hello datagram")
                stream_id = client._quic.get_next_available_stream_id()
                client._quic.send_stream_data(stream_id, b"GET /file\r\n", end_stream=True)
                client.transmit()
                await asyncio.wait_for(client.done.wait(), timeout=60)
                received_all = received_all and client.received == args.bytes
                await asyncio.sleep(0.2)  # let the session ticket arrive
        server.close()
    return 0 if received_all else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--port", type=int, default=5433)
    parser.add_argument("--bytes", type=int, default=200_000)
    parser.add_argument("--v2", action="store_true")
    parser.add_argument("--chacha", action="store_true")
    parser.add_argument("--key-update", action="store_true")
    parser.add_argument("--retry", action="store_true")
    parser.add_argument("--ipv6", action="store_true")
    parser.add_argument("--datagram", action="store_true")
    parser.add_argument("--zero-rtt", action="store_true", help="two connections: the second resumes with 0-RTT")
    parser.add_argument("--iface", default="lo")
    parser.add_argument("--linktype", default=None, help="tcpdump -y, e.g. LINUX_SLL with --iface any")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    keylog = args.out / "keys.log"
    keylog.unlink(missing_ok=True)
    capture = args.out / "capture.pcap"
    tcpdump = subprocess.Popen(
        ["tcpdump", "-i", args.iface, "--immediate-mode", "-B", "65536", "-U", "-s", "0", "-w", str(capture)]
        + (["-y", args.linktype] if args.linktype else [])
        + [f"udp port {args.port}"],
        stderr=subprocess.PIPE,
    )
    tcpdump.stderr.readline()  # "listening on ...": from here on it captures
    time.sleep(0.2)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = make_certificate(Path(tmp))
            status = asyncio.run(run(args, keylog, cert, key))
        time.sleep(0.5)
    finally:
        os.kill(tcpdump.pid, signal.SIGINT)
        print(tcpdump.communicate()[1].decode().strip())
    print(f"{capture}: {capture.stat().st_size} bytes, status {status}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
