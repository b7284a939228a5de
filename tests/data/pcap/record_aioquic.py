"""Record a real aioquic client/server run on loopback with its keylog (how the fixtures here were made).

Usage (root, tcpdump on PATH):
    python tests/data/pcap/record_aioquic.py OUTDIR --port 5433 --bytes 200000 [--v2] [--chacha]
        [--key-update] [--retry] [--ipv6] [--iface lo|any] [--linktype LINUX_SLL] [--datagram] [--zero-rtt]
    python tests/data/pcap/record_aioquic.py OUTDIR --port 5498 --bytes 10000 --connections 10000 \
        --parallel 8 --bulk-every 200 --bulk-bytes 10000000 --chacha-every 10

`--connections N` makes N distinct connections (each from its own client port, `--parallel` at a time, so their
packets interleave in the capture): every `--bulk-every`-th one downloads `--bulk-bytes` instead of `--bytes`, every
`--chacha-every`-th one offers only ChaCha20-Poly1305 (the others: aioquic's choice, AES-256-GCM). Connection n uses
client port `--first-client-port` + n, so no two share a UDP flow (random ephemeral ports would repeat after a few
hundred connections, and a decoder would take the new connection for the old one). This builds the large
multi-connection benchmark input of `bench/pcap_decode.py`.

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
    """Answers a request on a stream with `response_bytes` bytes (`GET /<n>`: n bytes), then FIN; echoes DATAGRAM
    frames."""

    response_bytes = 0

    def quic_event_received(self, event) -> None:
        if isinstance(event, StreamDataReceived) and event.end_stream:
            asked = event.data[5:].split(b"\r")[0] if event.data.startswith(b"GET /") else b""
            size = int(asked) if asked.isdigit() else self.response_bytes
            self._quic.send_stream_data(event.stream_id, b"x" * size, end_stream=True)
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
    with keylog.open("a", encoding="utf-8") as secrets:
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
        if args.connections:
            received_all = await many_connections(args, host, versions, secrets)
        else:
            received_all = await resumed_connections(args, host, versions, suites, secrets)
        server.close()
    return 0 if received_all else 1


async def resumed_connections(args: argparse.Namespace, host: str, versions, suites, secrets) -> bool:
    """One connection (two with --zero-rtt: a first fetches a session ticket, a second resumes with 0-RTT)."""
    client_tickets: list[object] = []
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
    return received_all


async def fetch(args: argparse.Namespace, host: str, client_config: QuicConfiguration, size: int, port: int) -> bool:
    """One connection from client port `port`: request `size` bytes, wait for them, close."""
    async with connect(
        host, args.port, configuration=client_config, create_protocol=FileClient, local_port=port
    ) as client:
        stream_id = client._quic.get_next_available_stream_id()
        client._quic.send_stream_data(stream_id, f"GET /{size}\r\n".encode(), end_stream=True)
        client.transmit()
        await asyncio.wait_for(client.done.wait(), timeout=120)
        return client.received == size


async def many_connections(args: argparse.Namespace, host: str, versions, secrets) -> bool:
    """`--connections` distinct connections, `--parallel` at a time, small and bulk downloads mixed."""
    numbers = iter(range(args.connections))
    results: list[bool] = []

    async def worker() -> None:
        for number in numbers:
            client_config = QuicConfiguration(is_client=True, alpn_protocols=["hq-interop"], secrets_log_file=secrets)
            client_config.verify_mode = ssl.CERT_NONE
            client_config.supported_versions = versions
            if args.chacha_every and number % args.chacha_every == args.chacha_every - 1:
                client_config.cipher_suites = [CipherSuite.CHACHA20_POLY1305_SHA256]
            bulk = args.bulk_every and number % args.bulk_every == 0
            size = args.bulk_bytes if bulk else args.bytes
            try:
                results.append(await fetch(args, host, client_config, size, args.first_client_port + number))
            except (TimeoutError, ConnectionError) as error:
                print(f"connection {number}: {type(error).__name__}: {error}")
                results.append(False)

    await asyncio.gather(*(worker() for _ in range(args.parallel)))
    print(f"{sum(results)} of {len(results)} connections received everything")
    return all(results)


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
    parser.add_argument("--connections", type=int, default=0, help="N distinct connections (see the module doc)")
    parser.add_argument("--parallel", type=int, default=8, help="with --connections: connections at a time")
    parser.add_argument("--bulk-every", type=int, default=0, help="with --connections: every Nth is a bulk transfer")
    parser.add_argument(
        "--bulk-bytes", type=int, default=10_000_000, help="with --connections: size of a bulk transfer"
    )
    parser.add_argument("--first-client-port", type=int, default=20_000, help="with --connections: see above")
    parser.add_argument("--chacha-every", type=int, default=0, help="with --connections: every Nth offers ChaCha20")
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
