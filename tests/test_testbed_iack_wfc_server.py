"""The IACK/WFC server on loopback (no root needed): what leaves the server, and when, per its qlog."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import pytest
from aioquic.asyncio.client import connect
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.logger import QuicLogger

from quicack.testbed.certs import CERT_SIZES, cert_paths, chain_der_bytes
from quicack.testbed.files import FILE_SIZES, ensure_files, file_bytes
from quicack.testbed.iack_wfc_server import HQ_ALPN, FileServerProtocol, HandshakeMode, TestbedQuicServer, open_endpoint

DELTA_MS = 150.0


async def _download(mode: HandshakeMode, www: Path, name: str = "10KB") -> tuple[bytes, dict[str, Any]]:
    paths = cert_paths("small")
    cfg = QuicConfiguration(is_client=False, alpn_protocols=HQ_ALPN)
    cfg.load_cert_chain(paths.chain, paths.key)
    cfg.quic_logger = QuicLogger()
    transport, _ = await open_endpoint(cfg, mode, DELTA_MS / 1000, www, "127.0.0.1", 0)
    port = transport.get_extra_info("sockname")[1]
    ccfg = QuicConfiguration(is_client=True, alpn_protocols=HQ_ALPN, verify_mode=ssl.CERT_NONE)
    try:
        async with connect("127.0.0.1", port, configuration=ccfg) as client:
            reader, writer = await client.create_stream()
            writer.write(f"GET /{name}\r\n".encode())
            writer.write_eof()
            body = await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        transport.close()
    trace = cfg.quic_logger.to_dict()["traces"][0]
    return body, trace


def _sent_initials(trace: dict[str, Any]) -> list[tuple[float, list[str]]]:
    out = []
    for ev in trace["events"]:
        if ev["name"] == "transport:packet_sent" and ev["data"]["header"]["packet_type"] == "initial":
            out.append((ev["time"], [f["frame_type"] for f in ev["data"]["frames"]]))
    return out


def _first_received(trace: dict[str, Any]) -> float:
    return next(ev["time"] for ev in trace["events"] if ev["name"] == "transport:packet_received")


@pytest.fixture(scope="module")
def www(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("www")
    ensure_files(d, ["10KB"])
    return d


def test_iack_sends_ack_alone_then_serverhello_after_delta(www: Path) -> None:
    body, trace = asyncio.run(_download(HandshakeMode.IACK, www))
    assert body == file_bytes("10KB")
    initials = _sent_initials(trace)
    t_recv = _first_received(trace)
    first_t, first_frames = initials[0]
    assert first_frames == ["ack"], "IACK: the first server Initial carries only the ACK"
    assert first_t - t_recv < 50, "IACK: the ACK leaves at once"
    crypto_t = next(t for t, frames in initials if "crypto" in frames)
    assert crypto_t - t_recv >= DELTA_MS, "IACK: ServerHello only after the certificate delay"


def test_wfc_coalesces_ack_and_serverhello_after_delta(www: Path) -> None:
    body, trace = asyncio.run(_download(HandshakeMode.WFC, www))
    assert body == file_bytes("10KB")
    initials = _sent_initials(trace)
    first_t, first_frames = initials[0]
    assert "ack" in first_frames and "crypto" in first_frames, "WFC: ACK and ServerHello in one Initial"
    # The server logs when it held the first datagram back and when it released it (quicack:* events).
    t_held = next(ev["time"] for ev in trace["events"] if ev["name"] == "quicack:handshake_deferred")
    t_released = next(ev["time"] for ev in trace["events"] if ev["name"] == "quicack:handshake_released")
    assert t_released - t_held >= DELTA_MS - 1
    assert first_t >= t_released


def test_none_mode_is_plain_aioquic(www: Path) -> None:
    body, trace = asyncio.run(_download(HandshakeMode.NONE, www))
    assert body == file_bytes("10KB")
    first_t, first_frames = _sent_initials(trace)[0]
    assert "ack" in first_frames and "crypto" in first_frames
    assert first_t - _first_received(trace) < 50


@pytest.mark.parametrize("kind", sorted(CERT_SIZES))
def test_certificate_chain_sizes(kind: str) -> None:
    assert chain_der_bytes(cert_paths(kind).chain) == CERT_SIZES[kind]


def test_files_are_deterministic(tmp_path: Path) -> None:
    a = ensure_files(tmp_path / "a", ["10KB"])["10KB"]
    b = ensure_files(tmp_path / "b", ["10KB"])["10KB"]
    assert a.sha256 == b.sha256 and a.size_bytes == FILE_SIZES["10KB"]


class _CollectingTransport(asyncio.DatagramTransport):
    """The server's socket, in memory: what it sends, to whom."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[bytes, Any]] = []

    def sendto(self, data: bytes, addr: Any = None) -> None:
        self.sent.append((data, addr))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 4433) if name == "sockname" else default


def test_issued_connection_ids_are_routable_as_soon_as_they_are_sent(www: Path) -> None:
    """A client may switch to a connection ID the moment it learns it (quic-go does after a
    probe). Stock aioquic routes a newly issued ID only at the server's next event, so packets to
    it were dropped until a timer fired; the testbed server routes it when it sends it."""
    from aioquic.quic.connection import QuicConnection

    async def handshake_without_further_server_input() -> tuple[set[bytes], set[bytes]]:
        paths = cert_paths("small")
        cfg = QuicConfiguration(is_client=False, alpn_protocols=HQ_ALPN)
        cfg.load_cert_chain(paths.chain, paths.key)
        server = TestbedQuicServer(
            mode=HandshakeMode.NONE, cert_delay_s=0.0, configuration=cfg,
            create_protocol=lambda *a, **k: FileServerProtocol(*a, www=www, **k),
        )  # fmt: skip
        transport = _CollectingTransport()
        server.connection_made(transport)
        client = QuicConnection(
            configuration=QuicConfiguration(is_client=True, alpn_protocols=HQ_ALPN, verify_mode=ssl.CERT_NONE)
        )
        client_addr = ("127.0.0.1", 50000)
        client.connect(("127.0.0.1", 4433), now=0.0)
        now = 0.0
        # Exchange datagrams until the client has the server's NEW_CONNECTION_ID frames; the server
        # then gets nothing more: no datagram, no timer.
        for _ in range(10):
            now += 0.001
            for data, _addr in client.datagrams_to_send(now=now):
                server.datagram_received(data, client_addr)
            for data, _addr in transport.sent:
                client.receive_datagram(data, ("127.0.0.1", 4433), now=now)
            transport.sent.clear()
            if len(client._peer_cid_available) > 0:
                break
        issued = {cid.cid for cid in client._peer_cid_available}
        return issued, set(server._protocols)

    issued, routable = asyncio.run(handshake_without_further_server_input())
    assert issued, "the server issued no new connection IDs"
    assert issued <= routable


def test_a_qlog_trace_ended_twice_is_written_once(tmp_path: Path) -> None:
    """At shutdown the server writes every open trace; a connection closing afterwards ends its own
    trace again. aioquic's file logger raised ValueError there (tracebacks in the server's stderr)."""
    from quicack.testbed.iack_wfc_server import IdempotentQlogFileLogger

    logger = IdempotentQlogFileLogger(str(tmp_path))
    trace = logger.start_trace(is_client=False, odcid=bytes.fromhex("0011223344556677"))
    logger.end_trace(trace)
    logger.end_trace(trace)
    assert [p.name for p in tmp_path.iterdir()] == ["0011223344556677.qlog"]
