"""aioquic file server with instant ACK (IACK) and wait-for-certificate (WFC) handshakes (imc24 §2–§3).

A frontend that must fetch its certificate from a backend cannot send the ServerHello before the certificate
is there (the certificate-store delay Δt). Two behaviours are emulated on top of an unmodified aioquic:

* **WFC** — the first client flight is processed only Δt after its first datagram arrived, so the ACK of the
  ClientHello and the ServerHello leave together (coalesced in one datagram).
* **IACK** — the client's Initial packets are acknowledged at once, in an ACK-only Initial of their own; the
  CRYPTO data (the ClientHello) reaches TLS only Δt later, so ServerHello and the rest follow after Δt.
* **none** — plain aioquic, Δt is ignored.

Both delays are aioquic timers: the connection reports its release time through ``get_timer()`` and
``handle_timer()`` releases the held data, so the asyncio loop wakes exactly once (no busy wait, no sleep).
The hook is a ``QuicConnection`` subclass; aioquic's code is not copied.

Serves HTTP/3 (ALPN ``h3``) and HTTP/0.9 (ALPN ``hq-interop``) from ``--www``; the random test files are
written there from a fixed seed if missing.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import enum
import json
import logging
import os
import signal
import ssl
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aioquic
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.asyncio.server import QuicServer
from aioquic.buffer import Buffer
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic import events
from aioquic.quic.configuration import SMALLEST_MAX_DATAGRAM_SIZE, QuicConfiguration
from aioquic.quic.connection import (
    NetworkAddress,
    QuicConnection,
    QuicConnectionError,
    QuicReceiveContext,
)
from aioquic.quic.logger import QuicFileLogger
from aioquic.quic.packet import QuicPacketType, pull_quic_header
from aioquic.quic.recovery import QuicPacketPacer
from aioquic.tls import Epoch
from aioquic.tls import State as TlsState

from quicack.testbed.certs import CERT_SIZES, cert_paths
from quicack.testbed.files import ensure_files

HQ_ALPN = ["hq-interop"]
log = logging.getLogger("quicack.testbed.iack_wfc_server")
# The congestion controllers aioquic 1.7 registers (aioquic.quic.congestion): --congestion-control.
_CONGESTION_CONTROLS = ("cubic", "reno")


class HandshakeMode(enum.StrEnum):
    NONE = "none"
    IACK = "iack"
    WFC = "wfc"


@dataclass(frozen=True)
class ServerSettings:
    """Everything that shapes the server's behaviour; written to ``--info-json`` for run.json."""

    host: str
    port: int
    cert_size: str
    mode: HandshakeMode
    cert_delay_ms: float
    www: Path
    qlog_dir: Path | None
    keylog: Path | None
    initial_rtt_ms: float | None = None
    congestion_control: str | None = None  # aioquic's congestion_control_algorithm ('reno' | 'cubic'); None: default
    pacing: bool = True  # False: no packet pacing (UnpacedPacer), bursts up to the congestion window

    def describe(self, cert_bytes: int) -> dict[str, Any]:
        cfg = QuicConfiguration(is_client=False)
        rtt_ms = self.initial_rtt_ms if self.initial_rtt_ms is not None else cfg.initial_rtt * 1000
        return {
            "server_impl": "aioquic",
            "server_version": aioquic.__version__,
            "host": self.host,
            "port": self.port,
            "mode": self.mode.value,
            "cert_size": self.cert_size,
            "cert_bytes": cert_bytes,
            "cert_delay_ms": self.cert_delay_ms if self.mode is not HandshakeMode.NONE else 0.0,
            # aioquic 1.7's PTO before the first RTT sample is 2 * initial_rtt (QuicPacketRecovery.get_probe_timeout).
            "server_initial_rtt_ms": rtt_ms,
            "server_initial_pto_ms": 2 * rtt_ms,
            "congestion_control": self.congestion_control or cfg.congestion_control_algorithm,
            "pacing": self.pacing,
            "alpn": H3_ALPN + HQ_ALPN,
        }


class UnpacedPacer(QuicPacketPacer):
    """aioquic's pacer that never learns a rate: without ``packet_time`` its ``next_send_time`` is None, so the
    connection sends whatever the congestion window allows at once (ackfreq22 Fig. 5: cwnd steps without pacing)."""

    def update_rate(self, congestion_window: int, smoothed_rtt: float) -> None:
        """Keeps the pacer without a rate (aioquic calls this after each RTT sample and congestion event)."""


class DeferredHandshakeConnection(QuicConnection):
    """A server ``QuicConnection`` that holds back its first client flight for Δt (IACK or WFC), and paces its
    packets as aioquic does unless ``pacing`` is False."""

    def __init__(self, *, mode: HandshakeMode, cert_delay_s: float, pacing: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not pacing:
            # aioquic 1.7 has no pacing switch; its recovery object owns the pacer that send timing consults.
            self._loss._pacer = UnpacedPacer(max_datagram_size=self._max_datagram_size)
        self._hs_mode = mode
        self._hs_delay_s = cert_delay_s
        self._hs_release_at: float | None = None
        self._hs_released = mode is HandshakeMode.NONE
        # WFC holds whole datagrams, IACK holds CRYPTO frames of Initial packets (context, type, raw frame).
        self._held_datagrams: list[tuple[bytes, NetworkAddress]] = []
        self._held_crypto: list[tuple[QuicReceiveContext, int, bytes]] = []

    # --- WFC: hold whole datagrams -------------------------------------------------------------------------
    def receive_datagram(self, data: bytes, addr: NetworkAddress, now: float) -> None:
        if self._hs_mode is HandshakeMode.WFC and not self._hs_released:
            if self._hs_release_at is None:
                self._hs_release_at = now + self._hs_delay_s
                self._log_quicack("handshake_deferred", {"release_in_ms": self._hs_delay_s * 1000})
            self._held_datagrams.append((data, addr))
            return
        super().receive_datagram(data, addr, now)

    def _wfc_silent(self) -> bool:
        """WFC sends nothing before its ServerHello: not even an ACK for a ClientHello split over datagrams."""
        if self._hs_mode is not HandshakeMode.WFC:
            return False
        if not self._hs_released or not self._network_paths:
            return True
        tls = getattr(self, "tls", None)
        return tls is not None and tls.state == TlsState.SERVER_EXPECT_CLIENT_HELLO and not self._close_pending

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, NetworkAddress]]:
        # Before WFC has fed the first datagram, the connection has no network path yet.
        if not self._network_paths or self._wfc_silent():
            return []
        return super().datagrams_to_send(now)

    # --- IACK: hold CRYPTO frames of Initial packets; the packets themselves are processed and ACKed --------
    def _handle_crypto_frame(self, context: QuicReceiveContext, frame_type: int, buf: Buffer) -> None:
        if self._hs_mode is HandshakeMode.IACK and not self._hs_released and context.epoch == Epoch.INITIAL:
            start = buf.tell()
            buf.pull_uint_var()  # offset
            length = buf.pull_uint_var()
            buf.pull_bytes(length)
            raw = buf.data_slice(start, buf.tell())
            if self._hs_release_at is None:
                self._hs_release_at = context.time + self._hs_delay_s
                self._log_quicack("handshake_deferred", {"release_in_ms": self._hs_delay_s * 1000})
            # Log the frame in this packet's qlog entry, as aioquic would, by parsing it again.
            if self._quic_logger is not None and context.quic_logger_frames is not None:
                from aioquic.quic.packet import QuicStreamFrame

                b = Buffer(data=raw)
                off = b.pull_uint_var()
                ln = b.pull_uint_var()
                context.quic_logger_frames.append(
                    self._quic_logger.encode_crypto_frame(QuicStreamFrame(offset=off, data=b.pull_bytes(ln)))
                )
            self._held_crypto.append((context, frame_type, raw))
            return
        super()._handle_crypto_frame(context, frame_type, buf)

    # --- timer ---------------------------------------------------------------------------------------------
    def get_timer(self) -> float | None:
        release = None if self._hs_released else self._hs_release_at
        if not self._network_paths:
            return release
        if self._hs_released and self._wfc_silent():
            # The pending ACK is withheld on purpose; its (past) ack timer would wake the loop in a tight circle.
            # The rest of the ClientHello arriving, or the idle timeout, is what moves on.
            return self._close_at
        timer = super().get_timer()
        if release is not None and (timer is None or release < timer):
            return release
        return timer

    def handle_timer(self, now: float) -> None:
        if not self._hs_released and self._hs_release_at is not None and now >= self._hs_release_at:
            self._release(now)
        if self._network_paths:
            super().handle_timer(now)

    def _release(self, now: float) -> None:
        self._hs_released = True
        self._log_quicack("handshake_released", {"mode": self._hs_mode.value})
        # Client retransmissions held during Δt are duplicates of data the server never answered; aioquic
        # would take them as "my flight was lost" and resend it at once. Suppress that while releasing.
        retransmitted = self._crypto_retransmitted
        self._crypto_retransmitted = True
        for data, addr in self._held_datagrams:
            super().receive_datagram(data, addr, now)
        self._held_datagrams.clear()
        for context, frame_type, raw in self._held_crypto:
            # A fresh frame list: the original packet's qlog entry already lists this frame.
            ctx = dataclasses.replace(context, time=now, quic_logger_frames=[])
            try:
                super()._handle_crypto_frame(ctx, frame_type, Buffer(data=raw))
            except QuicConnectionError as exc:
                self.close(
                    error_code=exc.error_code,
                    frame_type=exc.frame_type,
                    reason_phrase=exc.reason_phrase,
                )
                break
        self._held_crypto.clear()
        self._crypto_retransmitted = retransmitted

    def _log_quicack(self, event: str, data: dict[str, Any]) -> None:
        if self._quic_logger is not None:
            self._quic_logger.log_event(category="quicack", event=event, data=data)


@dataclass
class _HqRequest:
    buf: bytearray = field(default_factory=bytearray)
    done: bool = False


class FileServerProtocol(QuicConnectionProtocol):
    """Answers GET /<name> with the file from `www`, over h3 or hq-interop (whichever ALPN was negotiated)."""

    def __init__(self, *args: Any, www: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._www = www
        self._h3: H3Connection | None = None
        self._alpn: str | None = None
        self._hq: dict[int, _HqRequest] = {}

    def quic_event_received(self, event: events.QuicEvent) -> None:
        if isinstance(event, events.ProtocolNegotiated):
            self._alpn = event.alpn_protocol
            if event.alpn_protocol in H3_ALPN:
                self._h3 = H3Connection(self._quic)
        if self._h3 is not None:
            for h3_event in self._h3.handle_event(event):
                self._h3_event(h3_event)
        elif self._alpn in HQ_ALPN and isinstance(event, events.StreamDataReceived):
            self._hq_data(event)

    def transmit(self) -> None:
        super().transmit()
        # aioquic queues ConnectionIdIssued while it writes NEW_CONNECTION_ID frames in
        # datagrams_to_send(), and QuicServer routes the new IDs only at the next
        # _process_events() — on the next datagram to an old ID or the next timer. A client that
        # switches to a new ID at once (quic-go after a probe) is unroutable until then, and its
        # packets are dropped: a server artefact, not the handshake behaviour under test.
        self._process_events()

    def _read(self, path: str) -> bytes | None:
        name = Path(path.split("?", 1)[0]).name
        target = self._www / name
        if not name or not target.is_file():
            return None
        return target.read_bytes()

    def _h3_event(self, event: H3Event) -> None:
        assert self._h3 is not None
        if isinstance(event, HeadersReceived):
            headers = dict(event.headers)
            body = self._read(headers.get(b":path", b"/").decode())
            if body is None:
                self._h3.send_headers(event.stream_id, [(b":status", b"404")], end_stream=True)
            else:
                self._h3.send_headers(
                    event.stream_id,
                    [(b":status", b"200"), (b"content-length", str(len(body)).encode())],
                )
                self._h3.send_data(event.stream_id, body, end_stream=True)
            self.transmit()
        elif isinstance(event, DataReceived):
            pass  # GET has no body

    def _hq_data(self, event: events.StreamDataReceived) -> None:
        req = self._hq.setdefault(event.stream_id, _HqRequest())
        if req.done:
            return
        req.buf += event.data
        if b"\n" not in req.buf and not event.end_stream:
            return
        req.done = True
        line = req.buf.split(b"\n", 1)[0].strip().decode(errors="replace")
        parts = line.split()
        body = self._read(parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
        self._quic.send_stream_data(event.stream_id, body or b"", end_stream=True)
        self.transmit()


class TestbedQuicServer(QuicServer):  # noqa: D101 - not a pytest test class
    __test__ = False
    """aioquic's ``QuicServer``, but new connections are ``DeferredHandshakeConnection``s.

    Only the creation of a connection for a new Initial is done here; everything else (routing by CID,
    version negotiation) is aioquic's own ``datagram_received``.
    """

    def __init__(self, *, mode: HandshakeMode, cert_delay_s: float, pacing: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._hs_mode = mode
        self._hs_delay_s = cert_delay_s
        self._pacing = pacing

    def datagram_received(self, data: bytes | str, addr: NetworkAddress) -> None:
        data = bytes(data)  # type: ignore[arg-type]  # asyncio passes bytes
        try:
            header = pull_quic_header(Buffer(data=data), host_cid_length=self._configuration.connection_id_length)
        except ValueError:
            return
        if (
            header.destination_cid not in self._protocols
            and header.packet_type == QuicPacketType.INITIAL
            and header.version in self._configuration.supported_versions
            and len(data) >= SMALLEST_MAX_DATAGRAM_SIZE
        ):
            self._new_connection(header.destination_cid)
        super().datagram_received(data, addr)

    def _new_connection(self, original_dcid: bytes) -> None:
        from functools import partial

        connection = self._create_connection(original_dcid)
        protocol = self._create_protocol(connection, stream_handler=self._stream_handler)
        protocol.connection_made(self._transport)
        protocol._connection_id_issued_handler = partial(self._connection_id_issued, protocol=protocol)
        protocol._connection_id_retired_handler = partial(self._connection_id_retired, protocol=protocol)
        protocol._connection_terminated_handler = partial(self._connection_terminated, protocol=protocol)
        self._protocols[original_dcid] = protocol
        self._protocols[connection.host_cid] = protocol
        self._connection_started(connection, protocol)

    def _create_connection(self, original_dcid: bytes) -> QuicConnection:
        """The connection object for a new Initial; subclasses (the scan's CDN frontend) make their own kind."""
        return DeferredHandshakeConnection(
            mode=self._hs_mode,
            cert_delay_s=self._hs_delay_s,
            pacing=self._pacing,
            configuration=self._configuration,
            original_destination_connection_id=original_dcid,
        )

    def _connection_started(self, connection: QuicConnection, protocol: QuicConnectionProtocol) -> None:
        """Called once a new connection is routable; a hook for subclasses."""


def build_configuration(settings: ServerSettings) -> tuple[QuicConfiguration, int]:
    paths = cert_paths(settings.cert_size)
    cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN + HQ_ALPN)
    cfg.load_cert_chain(paths.chain, paths.key)
    if settings.initial_rtt_ms is not None:
        cfg.initial_rtt = settings.initial_rtt_ms / 1000.0
    if settings.congestion_control is not None:
        cfg.congestion_control_algorithm = settings.congestion_control
    if settings.qlog_dir is not None:
        settings.qlog_dir.mkdir(parents=True, exist_ok=True)
        cfg.quic_logger = IdempotentQlogFileLogger(str(settings.qlog_dir))
    if settings.keylog is not None:
        settings.keylog.parent.mkdir(parents=True, exist_ok=True)
        cfg.secrets_log_file = settings.keylog.open("a", buffering=1, encoding="utf-8")
    return cfg, paths.chain_der_bytes


class IdempotentQlogFileLogger(QuicFileLogger):
    """aioquic's file logger, but ending a trace twice is harmless: at shutdown the server writes every
    trace still open, and a connection closing afterwards would end its own again (ValueError)."""

    def end_trace(self, trace: Any) -> None:
        if trace in self._traces:
            super().end_trace(trace)


async def open_endpoint(
    configuration: QuicConfiguration, mode: HandshakeMode, cert_delay_s: float, www: Path, host: str, port: int,
    pacing: bool = True,
) -> tuple[asyncio.DatagramTransport, TestbedQuicServer]:
    """A listening ``TestbedQuicServer`` serving files from ``www``."""
    loop = asyncio.get_running_loop()
    return await loop.create_datagram_endpoint(
        lambda: TestbedQuicServer(
            mode=mode,
            cert_delay_s=cert_delay_s,
            pacing=pacing,
            configuration=configuration,
            create_protocol=lambda *args, **kwargs: FileServerProtocol(*args, www=www, **kwargs),
        ),
        local_addr=(host, port),
    )


async def serve(settings: ServerSettings, ready_file: Path | None = None) -> None:
    ensure_files(settings.www)
    cfg, cert_bytes = build_configuration(settings)
    loop = asyncio.get_running_loop()
    transport, server = await open_endpoint(cfg, settings.mode, settings.cert_delay_ms / 1000.0, settings.www,
                                            settings.host, settings.port,
                                           settings.pacing)  # fmt: skip
    warm_ms = await warm_up(settings, settings.www)
    info = settings.describe(cert_bytes) | {
        "pid": os.getpid(),
        "started_unix_s": time.time(),
        "warm_up_ms": round(warm_ms, 2),
    }
    if ready_file is not None:
        tmp = ready_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=1), encoding="utf-8")
        tmp.replace(ready_file)
    print(json.dumps({"ready": True} | info), flush=True)

    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        server.close()
        # Let CONNECTION_CLOSE frames leave, then write every qlog trace still open.
        await asyncio.sleep(0.05)
        logger = cfg.quic_logger
        if isinstance(logger, QuicFileLogger):
            for trace in list(logger._traces):
                logger.end_trace(trace)
        if cfg.secrets_log_file is not None:
            cfg.secrets_log_file.close()
        transport.close()


async def warm_up(settings: ServerSettings, www: Path) -> float:
    """One handshake + download over loopback before the measured connection.

    The first connection of a fresh Python process pays for lazy imports and first-use initialisation (several
    ms of extra processing before the first ACK), which would otherwise inflate the measured server delay of
    every run. The warm-up uses its own configuration without qlog or keylog, so it leaves no trace.
    """
    from aioquic.asyncio.client import connect

    t0 = time.perf_counter()
    paths = cert_paths(settings.cert_size)
    cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN + HQ_ALPN)
    cfg.load_cert_chain(paths.chain, paths.key)
    transport, _ = await open_endpoint(cfg, settings.mode, 0.0, www, "127.0.0.1", 0)
    port = transport.get_extra_info("sockname")[1]
    client_cfg = QuicConfiguration(is_client=True, alpn_protocols=HQ_ALPN, verify_mode=ssl.CERT_NONE)
    try:
        async with connect("127.0.0.1", port, configuration=client_cfg) as client:
            reader, writer = await client.create_stream()
            writer.write(b"GET /10KB\r\n")
            writer.write_eof()
            await asyncio.wait_for(reader.read(), timeout=5)
    except (TimeoutError, OSError, ConnectionError) as exc:
        log.warning("warm-up failed: %s", exc)
    finally:
        transport.close()
    return (time.perf_counter() - t0) * 1000


def parse_args(argv: list[str] | None = None) -> tuple[ServerSettings, Path | None, bool]:
    ap = argparse.ArgumentParser(description="quicack testbed server (aioquic, IACK/WFC)")
    ap.add_argument("--host", default="::")
    ap.add_argument("--port", type=int, default=443)
    ap.add_argument("--cert-size", choices=sorted(CERT_SIZES), default="small")
    ap.add_argument("--mode", choices=[m.value for m in HandshakeMode], default="none")
    ap.add_argument("--cert-delay-ms", type=float, default=0.0, help="certificate-store delay Δt")
    ap.add_argument("--www", type=Path, required=True)
    ap.add_argument("--qlog-dir", type=Path)
    ap.add_argument("--keylog", type=Path)
    ap.add_argument("--initial-rtt-ms", type=float, help="server initial RTT (aioquic default 100 ms)")
    ap.add_argument("--congestion-control", choices=sorted(_CONGESTION_CONTROLS),
                    help="congestion controller (aioquic default: reno)")
    ap.add_argument("--no-pacing", action="store_true", help="send without aioquic's packet pacing")
    ap.add_argument("--ready-file", type=Path, help="write server info JSON here once listening")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    return (
        ServerSettings(
            host=a.host,
            port=a.port,
            cert_size=a.cert_size,
            mode=HandshakeMode(a.mode),
            cert_delay_ms=a.cert_delay_ms,
            www=a.www,
            qlog_dir=a.qlog_dir,
            keylog=a.keylog,
            initial_rtt_ms=a.initial_rtt_ms,
            congestion_control=a.congestion_control,
            pacing=not a.no_pacing,
        ),
        a.ready_file,
        a.verbose,
    )


def main(argv: list[str] | None = None) -> None:
    settings, ready_file, verbose = parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr)
    asyncio.run(serve(settings, ready_file))


if __name__ == "__main__":
    main()
