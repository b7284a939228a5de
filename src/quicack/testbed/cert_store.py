"""The emulated CDN's certificate store: frontends fetch a domain's certificate from it over an emulated link.

A CDN frontend that has no certificate for a server name at hand must get it from a backend before it can send
its ServerHello (imc24 §2). Here the backend is this TCP service in its own namespace; the link to it goes through
the scan router, whose NFQUEUE impairment gives it an RTT. The certificate wait a frontend sees is therefore that
RTT (the frontends keep one connection open, so no TCP handshake per fetch) plus the store's own delay.

The store's delay may change while it runs (the day/night pattern of a time series): it is read from
``--delay-file`` (a number of milliseconds) at every request, falling back to ``--delay-ms``.

Protocol: one JSON object per line. Request ``{"id": n, "sni": "name"}``; answer
``{"id": n, "sni": "name", "chain_pem": "...", "key_pem": "...", "store_delay_ms": d}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from dataclasses import dataclass, field
from pathlib import Path

from quicack.testbed.certs import DomainCertificate, domain_certificate


@dataclass
class StoreDelay:
    """The store's current delay: the control file if present and readable, else the default."""

    default_ms: float
    control_file: Path | None = None

    def current_ms(self) -> float:
        if self.control_file is not None:
            try:
                return float(self.control_file.read_text(encoding="utf-8").strip())
            except (OSError, ValueError):
                pass
        return self.default_ms


@dataclass
class CertificateStore:
    """Certificates by server name, made on first request and kept."""

    certificates: dict[str, DomainCertificate] = field(default_factory=dict)
    unavailable: frozenset[str] = frozenset()  # names the store has no certificate for

    def get(self, sni: str) -> DomainCertificate:
        if sni in self.unavailable:
            raise LookupError(f"no certificate for {sni}")
        cert = self.certificates.get(sni)
        if cert is None:
            cert = self.certificates[sni] = domain_certificate(sni)
        return cert


async def _answer(store: CertificateStore, delay: StoreDelay, request: dict[str, object],
                  writer: asyncio.StreamWriter) -> None:  # fmt: skip
    delay_ms = delay.current_ms()
    await asyncio.sleep(delay_ms / 1000)
    try:
        cert = store.get(str(request["sni"]))
    except (ValueError, LookupError) as error:  # unknown, or not a name a certificate can be made for
        writer.write(json.dumps({"id": request["id"], "error": str(error)}).encode() + b"\n")
        await writer.drain()
        return
    answer = {
        "id": request["id"],
        "sni": cert.sni,
        "chain_pem": cert.chain_pem.decode(),
        "key_pem": cert.key_pem.decode(),
        "store_delay_ms": delay_ms,
    }
    writer.write(json.dumps(answer).encode() + b"\n")
    await writer.drain()


async def serve(host: str, port: int, delay: StoreDelay, preload: list[str], unavailable: frozenset[str]) -> None:
    store = CertificateStore(unavailable=unavailable)
    for sni in preload:  # made before listening, so that no fetch pays for key derivation and signing
        if sni not in unavailable:
            store.get(sni)

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pending: set[asyncio.Task[None]] = set()
        while line := await reader.readline():
            # Requests of one frontend are answered concurrently: one slow answer must not hold the others.
            task = asyncio.create_task(_answer(store, delay, json.loads(line), writer))
            pending.add(task)
            task.add_done_callback(pending.discard)
        writer.close()

    server = await asyncio.start_server(client, host, port)
    print(json.dumps({"ready": True, "certificates": len(store.certificates)}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=8443)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="store delay when --delay-file is absent")
    ap.add_argument("--delay-file", type=Path, help="file holding the current store delay in ms")
    ap.add_argument("--unavailable", type=Path, help="file with server names to answer with an error")
    ap.add_argument("--preload", type=Path, help="file with one server name per line, certificates made at start")
    a = ap.parse_args(argv)
    preload = a.preload.read_text(encoding="utf-8").split() if a.preload else []
    unavailable = frozenset(a.unavailable.read_text(encoding="utf-8").split()) if a.unavailable else frozenset()
    asyncio.run(serve(a.host, a.port, StoreDelay(a.delay_ms, a.delay_file), preload, unavailable))


if __name__ == "__main__":
    main()
