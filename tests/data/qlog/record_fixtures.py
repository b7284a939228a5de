"""Record the real aioquic and ngtcp2 qlog fixtures under tests/data/qlog/.

Not part of the test suite: run by hand (`python tests/data/qlog/record_fixtures.py OUT_DIR`), then copy the
files you want to keep. It starts, on 127.0.0.1 only (ports 6433-6499):

* a UDP relay that delays every datagram by DELAY_MS in each direction, so the path RTT is 2*DELAY_MS and the
  logged RTT metrics can be checked against a known value;
* an aioquic server (hq-interop style: the client sends a request line, the server answers FILE_BYTES bytes)
  logging with QuicFileLogger;
* an aioquic client through the relay, once with QuicFileLogger (one connection per file) and once with the
  in-memory QuicLogger holding two connections (one JSON document with two traces);
* ngtcp2's gtlsserver/gtlsclient (Debian ngtcp2 0.12.1) through the same relay with --qlog-dir.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import StreamDataReceived
from aioquic.quic.logger import QuicFileLogger, QuicLogger

HOST = "127.0.0.1"
AIOQUIC_SERVER_PORT = 6443
RELAY_PORT = 6444
NGTCP2_SERVER_PORT = 6445
NGTCP2_RELAY_PORT = 6446
DELAY_MS = 10.0
FILE_BYTES = 40_000


class DelayRelay(asyncio.DatagramProtocol):
    """Forward datagrams between one client and a fixed server, delaying each by DELAY_MS."""

    def __init__(self, server: tuple[str, int]) -> None:
        self.server = server
        self.client: tuple[str, int] | None = None
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        loop = asyncio.get_running_loop()
        if addr == self.server:
            dest = self.client
        else:
            self.client = addr
            dest = self.server
        if dest is not None and self.transport is not None:
            loop.call_later(DELAY_MS / 1000, self.transport.sendto, data, dest)


class FileServer(QuicConnectionProtocol):
    def quic_event_received(self, event) -> None:  # noqa: ANN001
        if isinstance(event, StreamDataReceived) and event.end_stream:
            self._quic.send_stream_data(event.stream_id, b"x" * FILE_BYTES, end_stream=True)
            self.transmit()


class FileClient(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.received = 0
        self.done: asyncio.Future[int] = asyncio.get_event_loop().create_future()

    def quic_event_received(self, event) -> None:  # noqa: ANN001
        if isinstance(event, StreamDataReceived):
            self.received += len(event.data)
            if event.end_stream and not self.done.done():
                self.done.set_result(self.received)


async def fetch(logger: QuicLogger | QuicFileLogger) -> int:
    cfg = QuicConfiguration(is_client=True, alpn_protocols=["hq-interop"], quic_logger=logger)
    cfg.verify_mode = ssl.CERT_NONE
    async with connect(HOST, RELAY_PORT, configuration=cfg, create_protocol=FileClient) as client:
        stream_id = client._quic.get_next_available_stream_id()
        client._quic.send_stream_data(stream_id, b"GET /file\r\n", end_stream=True)
        client.transmit()
        got = await asyncio.wait_for(client.done, 10)
    return got


async def record_aioquic(out: Path, cert: Path, key: Path) -> None:
    (out / "aioquic" / "server").mkdir(parents=True, exist_ok=True)
    (out / "aioquic" / "client").mkdir(parents=True, exist_ok=True)
    scfg = QuicConfiguration(is_client=False, alpn_protocols=["hq-interop"],
                             quic_logger=QuicFileLogger(str(out / "aioquic" / "server")))
    scfg.load_cert_chain(cert, key)
    server = await serve(HOST, AIOQUIC_SERVER_PORT, configuration=scfg, create_protocol=FileServer)
    loop = asyncio.get_running_loop()
    relay, _ = await loop.create_datagram_endpoint(lambda: DelayRelay((HOST, AIOQUIC_SERVER_PORT)),
                                                   local_addr=(HOST, RELAY_PORT))
    print("single:", await fetch(QuicFileLogger(str(out / "aioquic" / "client"))))
    multi = QuicLogger()
    print("multi:", await fetch(multi), await fetch(multi))
    (out / "aioquic" / "client_two_connections.qlog").write_text(json.dumps(multi.to_dict()), encoding="utf-8")
    await asyncio.sleep(0.2)
    relay.close()
    server.close()


async def record_ngtcp2(out: Path, cert: Path, key: Path) -> None:
    (out / "ngtcp2" / "server").mkdir(parents=True, exist_ok=True)
    (out / "ngtcp2" / "client").mkdir(parents=True, exist_ok=True)
    htdocs = Path(tempfile.mkdtemp())
    (htdocs / "file").write_bytes(os.urandom(FILE_BYTES))
    server = subprocess.Popen(["gtlsserver", "-q", "-d", str(htdocs), "--qlog-dir", str(out / "ngtcp2" / "server"),
                               HOST, str(NGTCP2_SERVER_PORT), str(key), str(cert)])
    loop = asyncio.get_running_loop()
    relay, _ = await loop.create_datagram_endpoint(lambda: DelayRelay((HOST, NGTCP2_SERVER_PORT)),
                                                   local_addr=(HOST, NGTCP2_RELAY_PORT))
    await asyncio.sleep(0.3)
    client = await asyncio.create_subprocess_exec(
        "gtlsclient", "-q", "--exit-on-all-streams-close", "--download", str(htdocs / "dl"),
        "--qlog-dir", str(out / "ngtcp2" / "client"), HOST, str(NGTCP2_RELAY_PORT),
        f"https://{HOST}:{NGTCP2_RELAY_PORT}/file")
    await asyncio.wait_for(client.wait(), 20)
    await asyncio.sleep(0.3)
    relay.close()
    server.terminate()  # only the process this script started
    server.wait()


def main() -> None:
    out = Path(sys.argv[1])
    cert, key = Path(sys.argv[2]), Path(sys.argv[3])
    asyncio.run(record_aioquic(out, cert, key))
    asyncio.run(record_ngtcp2(out, cert, key))


if __name__ == "__main__":
    main()
