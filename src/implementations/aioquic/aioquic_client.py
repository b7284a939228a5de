#!/usr/bin/env python3
"""Download one URL over QUIC with aioquic (HTTP/3 or hq-interop).

Writes a TLS keylog (NSS format) and a qlog (aioquic's QuicFileLogger: one JSON file per
connection, named <ODCID>.qlog, written when the connection ends).
Same command line as the other quicack clients:

    aioquic_client.py --alpn h3|hq --keylog FILE --qlog-dir DIR --download-dir DIR URL

With any of --ack-ratio, --ack-delay-ms / --ack-delay-rtt-fraction, --reordering the client acknowledges by that
policy (quicack.testbed.ack_policy_receiver: a QuicConnection subclass that logs why it sent each ACK); without
them it is aioquic as released.
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


def ack_policy_from_args(args: argparse.Namespace):  # -> AckPolicy | None
    """The receiver's ACK policy from the command line, or None (aioquic's own ACK schedule)."""
    if args.ack_ratio is None and args.ack_delay_ms is None and args.ack_delay_rtt_fraction is None \
            and args.reordering is None:
        return None
    # Imported only here: the default client needs nothing but aioquic.
    from quicack.testbed.ack_policy_receiver import AckPolicy

    defaults = AckPolicy()
    return AckPolicy(
        ack_ratio=defaults.ack_ratio if args.ack_ratio is None else args.ack_ratio,
        ack_delay_ms=(defaults.ack_delay_ms if args.ack_delay_ms is None and args.ack_delay_rtt_fraction is None
                      else args.ack_delay_ms),
        ack_delay_rtt_fraction=args.ack_delay_rtt_fraction,
        reordering=defaults.reordering if args.reordering is None else args.reordering,
    )


def protocol_factory(ack_policy):  # noqa: ANN001, ANN201 - AckPolicy is imported lazily
    """create_protocol for aioquic's connect(): DownloadProtocol, over an AckPolicyConnection when a policy is
    given. connect() builds a plain QuicConnection and uses it only through the protocol, so the protocol may
    carry another one, built from the same configuration, before anything is sent."""
    if ack_policy is None:
        return DownloadProtocol
    from quicack.testbed.ack_policy_receiver import AckPolicyConnection

    def create(connection, **kwargs) -> DownloadProtocol:  # noqa: ANN001
        return DownloadProtocol(
            AckPolicyConnection(configuration=connection.configuration, ack_policy=ack_policy), **kwargs
        )

    return create


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
    keylog = open(args.keylog, "a", encoding="utf-8") if args.keylog else None
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
            create_protocol=protocol_factory(ack_policy_from_args(args)),
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
    policy = parser.add_argument_group("ACK policy (default: aioquic's own, an ACK 1 ms after the first packet)")
    policy.add_argument("--ack-ratio", type=int, metavar="N", help="an ACK after N ack-eliciting packets (default 2)")
    delay = policy.add_mutually_exclusive_group()
    delay.add_argument("--ack-delay-ms", type=float, metavar="D", help="else an ACK D ms after the first (default 25)")
    delay.add_argument("--ack-delay-rtt-fraction", type=float, metavar="F", help="ACK delay = F x smoothed RTT")
    policy.add_argument("--reordering", choices=["D", "NR", "3A"],
                        help="D: ACK at once on reordering (default); NR: no reaction; 3A: AR 1 for 3 packets")
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
