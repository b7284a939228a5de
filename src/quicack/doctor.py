"""What this installation runs with (``quicack doctor``, ``quicack --version``): the capture decoder's and the qlog
reader's engine (compiled ``quicack_core`` or pure Python) with the core's version and build identity, tshark, the
Rust toolchain that builds the core, and the testbed's implementations found (``src/implementations/*/bin``,
Debian's ngtcp2, the browsers). Every line is read from the system as it is, nothing is assumed."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import quicack

# Browsers the testbed can drive where they are installed (Debian: chromium, firefox-esr).
BROWSERS = ("chromium", "firefox-esr")


@dataclass(frozen=True)
class Item:
    """One line of the report: what, its state (version, engine, 'not found'), and where it came from."""

    section: str
    name: str
    state: str
    detail: str = ""
    found: bool = True


def core_identity() -> tuple[str, str] | None:
    """(version, build identity) of the installed quicack_core, None when it is not installed. The version is the
    installed distribution's; the identity what its build recorded (quicack.compiled_core), with a note when the
    checkout's sources would build another."""
    from quicack.compiled_core import installed_identity, source_identity

    identity = installed_identity()
    if identity is None:
        return None
    try:
        version = metadata.version("quicack-core")
    except metadata.PackageNotFoundError:
        version = "unknown version"
    sources = source_identity()
    if sources not in (None, identity):
        identity += f"; not built from the sources as they are ({sources}): bash install.sh rebuilds it"
    return version, identity


def engines() -> list[Item]:
    """The capture decoder's and the qlog reader's engines as the readers will select them (environment included)."""
    from quicack.pcap.decoder_engine import ENVIRONMENT_VARIABLE as PCAP_VARIABLE
    from quicack.pcap.decoder_engine import select_engine
    from quicack.qlog.reader_engine import ENVIRONMENT_VARIABLE as QLOG_VARIABLE
    from quicack.qlog.reader_engine import lane_class

    core = core_identity()
    core_text = "quicack_core not installed (install.sh builds it when Rust is there)"
    if core is not None:
        core_text = f"quicack_core {core[0]}" + (f", build {core[1]}" if core[1] else "")
    items = []
    for name, variable, select in (
        ("capture decoder", PCAP_VARIABLE, lambda: select_engine().name),
        ("qlog reader", QLOG_VARIABLE, lambda: "compiled" if lane_class() else "python"),
    ):
        try:
            engine = select()
        except (ImportError, ValueError) as error:
            items.append(Item("engines", name, "unavailable", str(error), found=False))
            continue
        chosen = (
            f"chosen by {variable}={os.environ[variable]}"
            if os.environ.get(variable)
            else f"the default; {variable} chooses"
        )
        detail = (core_text if engine == "compiled" else "pure Python: the same tables, slower") + f"; {chosen}"
        items.append(Item("engines", name, engine, detail))
    items.append(
        Item("engines", "quicack_core", core[0] if core else "not installed", core[1] if core else "", core is not None)
    )
    return items


def tool_version(argv: list[str], timeout_s: float = 20.0) -> str | None:
    """The first line a program prints for its version, None when it is missing or fails."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False, encoding="utf-8")
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


def tools() -> list[Item]:
    """tshark (the reference decoder of the tests and benchmarks) and the Rust toolchain that builds the core."""
    items = []
    for name, argv, purpose in (
        ("tshark", ["tshark", "--version"], "reference decoder (tests, bench/)"),
        ("rustc", ["rustc", "--version"], "builds quicack_core (install.sh)"),
        ("cargo", ["cargo", "--version"], "builds quicack_core and the Rust testbed programs"),
    ):
        version = tool_version(argv)
        where = shutil.which(argv[0])
        items.append(
            Item(
                "tools", name, version or "not found", f"{where}; {purpose}" if where else purpose, version is not None
            )
        )
    return items


def implementations() -> list[Item]:
    """The testbed's client and server programs this checkout finds (built ones, Debian's ngtcp2, scripts) and the
    browsers installed. Needs only the testbed's lookup functions, not root."""
    from quicack.testbed.clients import TESTBED_CLIENTS, client_executable, implementations_dir
    from quicack.testbed.server_programs import TESTBED_SERVERS, server_executable

    items = []
    for role, names, find in (
        ("client", TESTBED_CLIENTS, client_executable),
        ("server", TESTBED_SERVERS, server_executable),
    ):
        for name in names:
            path = find(name)
            how = (f"apt-get install ngtcp2-{role}" if name == "ngtcp2"
                   else f"bash {implementations_dir()}/build.sh {name}")  # fmt: skip
            items.append(
                Item(
                    "testbed",
                    f"{name} {role}",
                    "found" if path else "not found",
                    str(path) if path else how,
                    path is not None,
                )
            )
    seen: set[Path] = set()
    for browser in BROWSERS:
        where = shutil.which(browser)
        # firefox is often a link to firefox-esr: one line per program.
        if where is None or Path(where).resolve() in seen:
            continue
        seen.add(Path(where).resolve())
        version = tool_version([browser, "--version"])
        items.append(Item("testbed", browser, version or "found (no version)", where))
    if not seen:
        items.append(Item("testbed", "browsers", "none found", f"looked for {', '.join(BROWSERS)}", found=False))
    return items


def report() -> list[Item]:
    return [*engines(), *tools(), *implementations()]


def format_report(items: list[Item]) -> str:
    header = (
        f"quicack {quicack.__version__} (Python {sys.version.split()[0]}, {sys.executable}; package at "
        f"{Path(quicack.__file__).parent})"
    )
    lines = [header]
    width = max(len(item.name) for item in items)
    section = None
    for item in items:
        if item.section != section:
            section = item.section
            lines += ["", f"{section}:"]
        lines.append(f"  {item.name:<{width}}  {item.state}" + (f"  [{item.detail}]" if item.detail else ""))
    return "\n".join(lines) + "\n"


def version_line() -> str:
    """One line for ``quicack --version``: the package and both engines."""
    by_name = {item.name: item for item in engines()}
    core = by_name["quicack_core"]
    core_text = (
        f"quicack_core {core.state}" + (f" build {core.detail}" if core.detail else "")
        if core.found
        else "no quicack_core"
    )
    return (f"quicack {quicack.__version__} (capture decoder: {by_name['capture decoder'].state}, "
            f"qlog reader: {by_name['qlog reader'].state}; {core_text})")  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="store_true", help="only the one line of `quicack --version`")
    parser.set_defaults(handler=lambda args: _version() if args.version else main())


def _version() -> int:
    print(version_line())
    return 0


def main() -> int:
    print(format_report(report()), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
