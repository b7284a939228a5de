"""A CDN-like QUIC frontend for emulated scans: per-domain certificates fetched from a store, kept in a cache.

Built on the testbed's aioquic IACK server (``iack_wfc_server``). For every new connection the frontend reads the
server name from the ClientHello and looks for that domain's certificate in its cache:

* **hit** (a busy domain, fetched recently): the handshake runs at once — ACK and ServerHello leave coalesced in
  one datagram.
* **miss** (a rarely seen domain, or the entry expired): the client's Initial is acknowledged at once (an
  *instant ACK*, plain or padded to a full datagram), the certificate is fetched from the certificate store over
  the emulated link, and the ServerHello follows when it arrives (Δt = link RTT + store delay). Connections that
  arrive while a fetch for their domain is under way wait for the same fetch (also instant ACKs).

Entries expire ``--cache-ttl-s`` after their last use. Every decision is written, one JSON line per connection
keyed by the client's SCID, to ``--decisions``: the configured truth that a scan's measurement is compared with.

HTTP/3 requests are answered ``200`` with a ``cf-ray: <16 hex>-<IATA>`` header naming this PoP.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import Buffer
from aioquic.h3.connection import H3_ALPN
from aioquic.h3.events import H3Event, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection, QuicReceiveContext
from aioquic.quic.packet import QuicFrameType
from aioquic.quic.packet_builder import QuicPacketBuilder
from aioquic.tls import Epoch
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from quicack.testbed.certs import cert_paths
from quicack.testbed.client_hello import client_hello_server_name
from quicack.testbed.iack_wfc_server import (
    HQ_ALPN,
    DeferredHandshakeConnection,
    FileServerProtocol,
    HandshakeMode,
    TestbedQuicServer,
)

_NO_RELEASE_YET = math.inf  # a held handshake whose certificate is still on its way: no timer for it


@dataclass(frozen=True)
class Certificate:
    """A domain's chain and key, parsed, as a frontend uses them."""

    sni: str
    leaf: x509.Certificate
    chain: list[x509.Certificate]
    key: ec.EllipticCurvePrivateKey


def parse_certificate(sni: str, chain_pem: str, key_pem: str) -> Certificate:
    certs = x509.load_pem_x509_certificates(chain_pem.encode())
    key = load_pem_private_key(key_pem.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return Certificate(sni, certs[0], certs[1:], key)


class StoreClient:
    """One long-lived TCP connection to the certificate store; requests are answered in any order, matched by id."""

    def __init__(self, host: str, port: int) -> None:
        self._host, self._port = host, port
        self._writer: asyncio.StreamWriter | None = None
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)

    async def connect(self) -> None:
        reader, self._writer = await asyncio.open_connection(self._host, self._port)
        asyncio.get_running_loop().create_task(self._read_answers(reader))

    async def _read_answers(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            answer = json.loads(line)
            future = self._waiting.pop(answer["id"], None)
            if future is not None and not future.done():
                future.set_result(answer)
        for future in self._waiting.values():
            future.set_exception(ConnectionError("certificate store closed the connection"))

    async def fetch(self, sni: str) -> dict[str, Any]:
        assert self._writer is not None, "connect() first"
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self._writer.write(json.dumps({"id": request_id, "sni": sni}).encode() + b"\n")
        return await future


@dataclass
class CertificateCache:
    """Certificates by server name, each kept until `ttl_s` after its last use; concurrent misses share one fetch."""

    store: StoreClient
    ttl_s: float
    clock: Callable[[], float] = time.monotonic
    _entries: dict[str, tuple[Certificate, float]] = field(default_factory=dict)  # sni -> (cert, expires at)
    _fetching: dict[str, asyncio.Task[Certificate]] = field(default_factory=dict)

    def lookup(self, sni: str) -> Certificate | None:
        """The cached certificate (and its lifetime renewed), or None."""
        entry = self._entries.get(sni)
        now = self.clock()
        if entry is None or entry[1] <= now:
            self._entries.pop(sni, None)
            return None
        self._entries[sni] = (entry[0], now + self.ttl_s)
        return entry[0]

    def fetch(self, sni: str, on_ready: Callable[[Certificate | None, str], None]) -> bool:
        """Start (or join) the fetch of `sni`; `on_ready(cert, error)` is called when it ends.

        Returns True if this call started a new fetch, False if it joined one under way."""
        task = self._fetching.get(sni)
        started = task is None
        if task is None:
            task = self._fetching[sni] = asyncio.get_running_loop().create_task(self._fetch(sni))

        def done(t: asyncio.Task[Certificate]) -> None:
            if t.exception() is not None:
                on_ready(None, repr(t.exception()))
            else:
                on_ready(t.result(), "")

        task.add_done_callback(done)
        return started

    async def _fetch(self, sni: str) -> Certificate:
        try:
            answer = await self.store.fetch(sni)
            if "error" in answer:
                raise LookupError(answer["error"])
            cert = parse_certificate(sni, answer["chain_pem"], answer["key_pem"])
            self._entries[sni] = (cert, self.clock() + self.ttl_s)
            return cert
        finally:
            self._fetching.pop(sni, None)


@dataclass
class DecisionLog:
    """One JSON line per connection: what this frontend decided, keyed by the client's Source Connection ID."""

    out: IO[str]
    frontend: str
    pop: str

    def write(self, **fields: Any) -> None:
        record = {"t_unix_s": time.time(), "frontend": self.frontend, "pop": self.pop} | fields
        self.out.write(json.dumps(record) + "\n")


class CertificateFetchingConnection(DeferredHandshakeConnection):
    """An IACK connection whose hold ends when the domain's certificate is there, not after a fixed Δt."""

    def __init__(self, *, cache: CertificateCache, decisions: DecisionLog, pad_instant_ack: bool,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(mode=HandshakeMode.IACK, cert_delay_s=0.0, **kwargs)
        self._cache = cache
        self._decisions = decisions
        self._pad_instant_ack = pad_instant_ack
        self._decided = False
        self._release_now = False
        self._client_hello: dict[int, bytes] = {}  # Initial CRYPTO data by offset, until the SNI is read
        self.wake: Callable[[], None] = lambda: None  # set by the server: re-arms the protocol's timer

    def receive_datagram(self, data: bytes, addr: Any, now: float) -> None:
        super().receive_datagram(data, addr, now)
        # A cache hit is decided while the datagram's frames are parsed (and held); releasing them only now, before
        # anything is sent, puts the ACK and the ServerHello into the same datagram.
        if self._release_now:
            self._release_now = False
            self._release(now)

    def _handle_crypto_frame(self, context: QuicReceiveContext, frame_type: int, buf: Buffer) -> None:
        if not self._decided and context.epoch == Epoch.INITIAL:
            if self._hs_release_at is None:
                self._hs_release_at = _NO_RELEASE_YET  # hold the frames until the decision
            start = buf.tell()
            offset = buf.pull_uint_var()
            data = buf.pull_bytes(buf.pull_uint_var())
            buf.seek(start)
            # quic-go splits and shuffles its ClientHello over several CRYPTO frames: collect them until the
            # server name can be read from the contiguous start.
            self._client_hello.update({offset: data})
            sni = client_hello_server_name(self._contiguous_client_hello())
            if sni is not None:
                self._decide(sni, context.time)
        super()._handle_crypto_frame(context, frame_type, buf)

    def _contiguous_client_hello(self) -> bytes:
        out = bytearray()
        while (chunk := self._client_hello.get(len(out))) is not None and chunk:
            out += chunk
        return bytes(out)

    def _decide(self, sni: str, now: float) -> None:
        self._decided = True
        client_scid = self._peer_cid.cid.hex()
        cert = self._cache.lookup(sni)
        if cert is not None:
            self._use(cert)
            self._release_now = True  # processed at once: ACK and ServerHello coalesced
            self._decisions.write(scid=client_scid, sni=sni, cache="hit", expected="coalesced",
                                  padded=False, fetch="none")  # fmt: skip
            return
        # Held until the certificate arrives; the base class acknowledges the Initial meanwhile.
        self._hs_release_at = _NO_RELEASE_YET
        started = self._cache.fetch(sni, self._certificate_arrived)
        self._decisions.write(scid=client_scid, sni=sni, cache="miss", expected="iack",
                              padded=self._pad_instant_ack, fetch="started" if started else "joined")  # fmt: skip

    def _use(self, cert: Certificate) -> None:
        self.tls.certificate = cert.leaf
        self.tls.certificate_chain = cert.chain
        self.tls.certificate_private_key = cert.key

    def _certificate_arrived(self, cert: Certificate | None, error: str) -> None:
        if cert is None:
            self._decisions.write(scid=self._peer_cid.cid.hex(), error=f"certificate fetch failed: {error}")
            self.close(error_code=0x1, reason_phrase="certificate unavailable")
        else:
            self._use(cert)
            self._hs_release_at = asyncio.get_running_loop().time()
        self.wake()

    def get_timer(self) -> float | None:
        timer = super().get_timer()
        return None if timer == _NO_RELEASE_YET else timer

    def _write_ack_frame(self, builder: QuicPacketBuilder, space: Any, now: float) -> None:
        super()._write_ack_frame(builder=builder, space=space, now=now)
        if self._pad_instant_ack and not self._hs_released and space is self._spaces.get(Epoch.INITIAL):
            # PADDING frames inside the ACK-only Initial fill the datagram, as padded instant ACKs in the wild do.
            room = min(builder.remaining_buffer_space, builder.remaining_flight_space)
            if room > 1:
                buf = builder.start_frame(QuicFrameType.PADDING, capacity=room)
                buf.push_bytes(bytes(room - 1))


class CdnProtocol(FileServerProtocol):
    """Answers every HTTP/3 request 200 with a cf-ray header naming the PoP (HEAD without a body)."""

    iata = "XXX"
    page = b"<html><body>quicack emulated CDN</body></html>\n"

    def _h3_event(self, event: H3Event) -> None:
        if not isinstance(event, HeadersReceived):
            return
        assert self._h3 is not None
        head = dict(event.headers).get(b":method") == b"HEAD"
        headers = [
            (b":status", b"200"),
            (b"cf-ray", f"{secrets.token_hex(8)}-{self.iata}".encode()),
            (b"server", b"quicack-cdn"),
            (b"content-type", b"text/html"),
            (b"content-length", str(len(self.page)).encode()),
        ]
        self._h3.send_headers(event.stream_id, headers, end_stream=head)
        if not head:
            self._h3.send_data(event.stream_id, self.page, end_stream=True)
        self.transmit()


class CdnFrontendServer(TestbedQuicServer):
    """The testbed server whose new connections fetch their certificates through the frontend's cache."""

    def __init__(self, *, cache: CertificateCache, decisions: DecisionLog, pad_instant_ack: bool,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(mode=HandshakeMode.IACK, cert_delay_s=0.0, **kwargs)
        self._cache = cache
        self._decisions = decisions
        self._pad = pad_instant_ack

    def _create_connection(self, original_dcid: bytes) -> QuicConnection:
        return CertificateFetchingConnection(
            cache=self._cache,
            decisions=self._decisions,
            pad_instant_ack=self._pad,
            configuration=self._configuration,
            original_destination_connection_id=original_dcid,
        )

    def _connection_started(self, connection: QuicConnection, protocol: QuicConnectionProtocol) -> None:
        if isinstance(connection, CertificateFetchingConnection):
            connection.wake = protocol.transmit


@dataclass(frozen=True)
class FrontendSettings:
    hosts: tuple[str, ...]
    port: int
    name: str
    iata: str
    pad_instant_ack: bool
    cache_ttl_s: float
    store_host: str
    store_port: int
    decisions: Path
    keylog: Path | None


async def serve(s: FrontendSettings) -> None:
    # The configured chain is only a fallback; every handshake gets its domain's certificate from the cache.
    default = cert_paths("small")
    cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN + HQ_ALPN)
    cfg.load_cert_chain(default.chain, default.key)
    if s.keylog is not None:
        cfg.secrets_log_file = s.keylog.open("a", buffering=1, encoding="utf-8")
    store = StoreClient(s.store_host, s.store_port)
    await store.connect()
    cache = CertificateCache(store, s.cache_ttl_s, clock=asyncio.get_running_loop().time)
    s.decisions.parent.mkdir(parents=True, exist_ok=True)
    decisions = DecisionLog(s.decisions.open("a", buffering=1, encoding="utf-8"), s.name, s.iata)
    protocol_class = type("PopProtocol", (CdnProtocol,), {"iata": s.iata})
    loop = asyncio.get_running_loop()
    transports = []
    # One socket per service address: replies must leave from the address the client sent to (anycast).
    for host in s.hosts:
        transport, _server = await loop.create_datagram_endpoint(
            lambda: CdnFrontendServer(
                cache=cache,
                decisions=decisions,
                pad_instant_ack=s.pad_instant_ack,
                configuration=cfg,
                create_protocol=lambda *a, **kw: protocol_class(*a, www=Path(os.devnull), **kw),
            ),
            local_addr=(host, s.port),
        )
        transports.append(transport)
    print(json.dumps({"ready": True, "frontend": s.name, "pid": os.getpid()}), flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for transport in transports:
            transport.close()
        decisions.out.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="0.0.0.0", help="service address(es), comma-separated")
    ap.add_argument("--port", type=int, default=443)
    ap.add_argument("--name", required=True, help="frontend id written into every decision")
    ap.add_argument("--iata", required=True, help="the PoP's IATA code, ends the cf-ray header")
    ap.add_argument("--padded", action="store_true", help="pad instant ACKs to a full datagram")
    ap.add_argument(
        "--cache-ttl-s", type=float, default=5.0, help="a certificate is dropped this long after its last use"
    )
    ap.add_argument("--store", required=True, help="certificate store HOST:PORT")
    ap.add_argument("--decisions", type=Path, required=True, help="JSON lines, one per connection")
    ap.add_argument("--keylog", type=Path)
    a = ap.parse_args(argv)
    store_host, store_port = a.store.rsplit(":", 1)
    settings = FrontendSettings(tuple(a.host.split(",")), a.port, a.name, a.iata, a.padded, a.cache_ttl_s, store_host,
                                int(store_port), a.decisions, a.keylog)  # fmt: skip
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
