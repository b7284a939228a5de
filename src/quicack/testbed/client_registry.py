"""The testbed's clients, each declared once: its name, the application protocols it speaks, where its program comes
from (built from ``src/implementations/<folder>/``, a Python script, a Debian package, a browser, the kernel), how
its command line is made and what its qlog looks like to the reader.

Who reads it: ``quicack.testbed.clients`` (how to run each client), ``src/implementations/build.sh`` (what to build
and where the binary goes: it runs this file as a script, ``python3 client_registry.py builds``), and tests tie it to
what cannot read it: the config schema's client enum (``workflow/schemas/testbed.schema.yaml``), the qlog reader's
detection (``quicack.qlog.detect``: a recorded qlog of each client is named as ``qlog`` says) and the browser driver
(tests/test_client_registry.py). A new client is one entry in ``CLIENTS`` plus its program folder.

Standard library only: build.sh runs it without the package installed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

H3 = "h3"
HQ = "hq"  # ALPN "hq-interop"
TCP = "tcp"  # a plain TCP byte stream (quicack.testbed.tcp_transfer), not QUIC

# How a client's command line is made (quicack.testbed.clients.client_command).
CONTRACT = "contract"
GTLSCLIENT = "gtlsclient"  # ngtcp2's example client's own options (SSLKEYLOGFILE, --download, host port URL)
BROWSER = "browser"  # python -m quicack.testbed.browsers
TCP_TRANSFER = "tcp_transfer"  # python -m quicack.testbed.tcp_transfer fetch


@dataclass(frozen=True)
class GoBuild:
    """Built by build.sh: ``go build -o <folder>/bin/<output> <package>`` in ``src/implementations/<folder>``."""

    folder: str
    output: str
    package: str = "./cmd/client"

    @property
    def binary(self) -> str:
        return f"{self.folder}/bin/{self.output}"


@dataclass(frozen=True)
class CargoBuild:
    """Built by build.sh: ``cargo build --release`` in ``src/implementations/<folder>``, the crate's binary copied
    to ``<folder>/bin/<output>``."""

    folder: str
    crate_binary: str
    output: str

    @property
    def binary(self) -> str:
        return f"{self.folder}/bin/{self.output}"


@dataclass(frozen=True)
class PythonScript:
    """Not built: ``src/implementations/<path>`` run by the package's Python; its version is the distribution's."""

    path: str
    distribution: str


@dataclass(frozen=True)
class DebianProgram:
    """Not built: a program on PATH from a Debian package (whose version is the client's)."""

    executable: str
    package: str


@dataclass(frozen=True)
class Browser:
    """A Debian browser, found and driven by quicack.testbed.browsers."""


@dataclass(frozen=True)
class Kernel:
    """The kernel's TCP, through quicack.testbed.tcp_transfer."""


Program = GoBuild | CargoBuild | PythonScript | DebianProgram | Browser | Kernel


@dataclass(frozen=True)
class Qlog:
    """What the qlog reader makes of the client's qlog: ``endpoints.implementation`` (the name
    quicack.qlog.profiles keys units and quirks on) and ``endpoints.dialect``."""

    implementation: str
    dialect: str


@dataclass(frozen=True)
class Client:
    name: str
    protocols: frozenset[str]  # H3, HQ, TCP
    program: Program
    command_line: str  # CONTRACT | GTLSCLIENT | BROWSER | TCP_TRANSFER
    qlog: Qlog | None  # None: writes no qlog
    # The version string from the program's --version output (built clients): "{}" is that output.
    version_label: str = "{}"
    # CONTRACT clients: the unit --timeout takes (Go's flag package wants a duration: "s") and extra environment.
    timeout_unit: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    # The testbed sets its ACK policy (quicack.testbed.clients.can_set_ack_policy says how).
    ack_policy: bool = False
    # Its TLS stack offers a post-quantum key share by default (X25519MLKEM768: Go >= 1.24's crypto/tls, BoringSSL
    # in quiche 0.30), so its ClientHello spans two Initial datagrams; ``--key-share x25519`` makes it offer X25519
    # alone, a one-datagram ClientHello like the paper's 2024 clients (imc24 Table 4: every client's second flight
    # starts at datagram 2). The other clients' default ClientHello fits one datagram already.
    key_share: bool = False
    # A failed download makes it exit non-zero (Debian's gtlsclient, ngtcp2 0.12, exits 0 even after a handshake
    # timeout; for every client the downloaded file's hash is what decides success).
    exit_status_is_reliable: bool = True


# Without GSO every datagram is its own packet on the wire and in captures, whatever the interface's offload settings
# (loopback accepts UDP GSO super-packets as they are).
_QUIC_GO_NO_GSO = {"QUIC_GO_DISABLE_GSO": "true"}

# Order: the imc24 testbed clients first, then the extra dialect for the qlog reader, then the browsers, then TCP.
CLIENTS: tuple[Client, ...] = (
    Client(
        "aioquic",
        frozenset({H3, HQ}),
        PythonScript("aioquic/aioquic_client.py", "aioquic"),
        CONTRACT,
        Qlog("aioquic", "json-0.3"),
        ack_policy=True,
    ),
    Client(
        "quic-go",
        frozenset({H3, HQ}),
        GoBuild("quic-go", "quic-go-client"),
        CONTRACT,
        Qlog("quic-go", "json-seq-main-schema"),
        version_label="quic-go {}",
        timeout_unit="s",
        environment=_QUIC_GO_NO_GSO,
        key_share=True,
    ),
    # golang.org/x/net/quic has no HTTP/3 layer.
    Client(
        "go-x-net",
        frozenset({HQ}),
        GoBuild("go-x-net", "go-x-net-client"),
        CONTRACT,
        Qlog("go-x-net", "json-seq-0.3"),
        version_label="golang.org/x/net {}",
        timeout_unit="s",
        environment=_QUIC_GO_NO_GSO,
        key_share=True,
    ),
    # Debian ships ngtcp2's HTTP/3 example client only (no HTTP/0.9 "h09client"); its ACK ratio is --ack-thresh.
    Client(
        "ngtcp2",
        frozenset({H3}),
        DebianProgram("gtlsclient", "ngtcp2-client"),
        GTLSCLIENT,
        Qlog("ngtcp2", "json-seq-0.3"),
        ack_policy=True,
        exit_status_is_reliable=False,
    ),
    Client(
        "quinn",
        frozenset({H3, HQ}),
        CargoBuild("quinn", "quicack-quinn-client", "quinn-client"),
        CONTRACT,
        Qlog("quinn", "json-seq-0.3"),
    ),
    Client(
        "quiche",
        frozenset({H3, HQ}),
        CargoBuild("quiche", "quicack-quiche-client", "quiche-client"),
        CONTRACT,
        Qlog("quiche", "json-seq-main-schema"),
        key_share=True,
    ),
    # quic-go v0.48: a qlog 0.3 header without file_schema (the extra dialect).
    Client(
        "quic-go-old",
        frozenset({H3, HQ}),
        GoBuild("quic-go-old", "quic-go-old-client"),
        CONTRACT,
        Qlog("quic-go", "json-seq-0.3"),
        version_label="quic-go {}",
        timeout_unit="s",
        environment=_QUIC_GO_NO_GSO,
    ),
    # Chromium writes no qlog: its NetLog is kept beside the keylog instead.
    Client("chromium", frozenset({H3}), Browser(), BROWSER, None),
    # Firefox's QUIC is neqo.
    Client("firefox", frozenset({H3}), Browser(), BROWSER, Qlog("neqo", "json-seq-0.3")),
    # Not QUIC: no keylog, no qlog; its ACK ratio is set from outside (quickack route, router ACK thinning).
    Client("linux-tcp", frozenset({TCP}), Kernel(), TCP_TRANSFER, None, ack_policy=True),
)
BY_NAME: dict[str, Client] = {client.name: client for client in CLIENTS}


def build_lines() -> list[str]:
    """What build.sh builds and reports, one line per client, fields separated by spaces:
    ``go <name> <folder> <package> <output> <version label>``, ``cargo <name> <folder> <crate binary> <output>
    <version label>`` (the label last: it may hold spaces), ``python <name> <script> <distribution>``,
    ``debian <name> <executable> <package>``."""
    lines = []
    for client in CLIENTS:
        program = client.program
        if isinstance(program, GoBuild):
            lines.append(f"go {client.name} {program.folder} {program.package} {program.output} {client.version_label}")
        elif isinstance(program, CargoBuild):
            lines.append(
                f"cargo {client.name} {program.folder} {program.crate_binary} {program.output} {client.version_label}"
            )
        elif isinstance(program, PythonScript):
            lines.append(f"python {client.name} {program.path} {program.distribution}")
        elif isinstance(program, DebianProgram):
            lines.append(f"debian {client.name} {program.executable} {program.package}")
    return lines


if __name__ == "__main__":
    if sys.argv[1:] != ["builds"]:
        sys.exit("usage: client_registry.py builds")
    print("\n".join(build_lines()))
