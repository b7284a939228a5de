#!/usr/bin/env python3
"""Download one URL over QUIC with aioquic (HTTP/3 or hq-interop).

Writes a TLS keylog (NSS format) and a qlog (aioquic's QuicFileLogger: one JSON file per
connection, named <ODCID>.qlog, written when the connection ends).
Same command line as the other quicack clients:

    aioquic_client.py --alpn h3|hq --keylog FILE --qlog-dir DIR --download-dir DIR URL
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import aioquic
from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import QuicEvent, StreamDataReceived, StreamReset
from aioquic.quic.logger import QuicFileLogger

ALPN_HQ = "hq-interop"


class DownloadProtocol(QuicConnectionProtocol):
    """Collects the body of the one request this client makes."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Created with the connection: the server's control and QPACK streams may arrive before
        # the request is sent, and must not be mistaken for the body.
        self._http: H3Connection | None = (
            H3Connection(self._quic) if self._quic.configuration.alpn_protocols == H3_ALPN else None
        )
        self._request_stream_id: int | None = None
        self._body = bytearray()
        self._status: int | None = None
        self._finished: asyncio.Future[bytes] = self._loop.create_future()

    async def fetch(self, authority: str, path: str, use_h3: bool) -> bytes:
        stream_id = self._quic.get_next_available_stream_id()
        self._request_stream_id = stream_id
        if use_h3:
            assert self._http is not None
            self._http.send_headers(
                stream_id,
                [
                    (b":method", b"GET"),
                    (b":scheme", b"https"),
                    (b":authority", authority.encode()),
                    (b":path", path.encode()),
                    (b"user-agent", f"aioquic/{aioquic.__version__}".encode()),
                ],
                end_stream=True,
            )
        else:
            self._quic.send_stream_data(stream_id, f"GET {path}\r\n".encode(), end_stream=True)
        self.transmit()
        body = await self._finished
        if use_h3 and self._status != 200:
            raise RuntimeError(f"HTTP status {self._status}")
        return body

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, StreamReset) and event.stream_id == self._request_stream_id and not self._finished.done():
            self._finished.set_exception(RuntimeError(f"stream reset, error code {event.error_code}"))
            return
        if self._http is not None:
            for http_event in self._http.handle_event(event):
                if getattr(http_event, "stream_id", None) != self._request_stream_id:
                    continue
                if isinstance(http_event, HeadersReceived):
                    self._status = int(dict(http_event.headers).get(b":status", b"0"))
                    if http_event.stream_ended:
                        self._finish()
                elif isinstance(http_event, DataReceived):
                    self._body += http_event.data
                    if http_event.stream_ended:
                        self._finish()
        elif isinstance(event, StreamDataReceived) and event.stream_id == self._request_stream_id:
            self._body += event.data
            if event.end_stream:
                self._finish()

    def _finish(self) -> None:
        if not self._finished.done():
            self._finished.set_result(bytes(self._body))


async def download(args: argparse.Namespace) -> None:
    url = urlsplit(args.url)
    if url.scheme != "https" or not url.hostname:
        raise ValueError(f"not an https URL: {args.url}")
    use_h3 = args.alpn == "h3"
    configuration = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN if use_h3 else [ALPN_HQ],
        # The testbed servers use self-signed certificates.
        verify_mode=False,
        server_name=url.hostname,
    )
    keylog = open(args.keylog, "a") if args.keylog else None
    configuration.secrets_log_file = keylog
    if args.qlog_dir:
        Path(args.qlog_dir).mkdir(parents=True, exist_ok=True)
        configuration.quic_logger = QuicFileLogger(args.qlog_dir)
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    try:
        async with connect(
            url.hostname,
            url.port or 443,
            configuration=configuration,
            create_protocol=DownloadProtocol,
            # Only the given URL: no session tickets, no 0-RTT, no other addresses.
            wait_connected=True,
        ) as client:
            body = await client.fetch(url.netloc, path, use_h3)
        # Leaving the context closes the connection; QuicFileLogger writes the qlog then.
    finally:
        if keylog:
            keylog.close()
    if not body:
        raise RuntimeError("empty response")
    out_path = Path(args.download_dir) / PurePosixPath(url.path).name
    out_path.write_bytes(body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", nargs="?")
    parser.add_argument("--alpn", choices=["h3", "hq"], default="h3")
    parser.add_argument("--keylog")
    parser.add_argument("--qlog-dir")
    parser.add_argument("--download-dir", default=".")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds")
    parser.add_argument("--version", action="store_true", help="print the aioquic version and exit")
    args = parser.parse_args()
    if args.version:
        print(aioquic.__version__)
        return 0
    if not args.url:
        parser.error("URL required")
    try:
        asyncio.run(asyncio.wait_for(download(args), args.timeout))
    except Exception as exc:  # noqa: BLE001 - any failure is reported the same way to the testbed
        print(f"download failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
