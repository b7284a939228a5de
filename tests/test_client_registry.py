"""The client registry (quicack.testbed.client_registry) against what cannot import it: the config schema's client
enum, src/implementations/build.sh (which reads the registry as a script: its dry run says what it builds where),
the qlog reader's detection (a recorded qlog of each client, tests/data) and the browser driver. Each test fails
when its side and the registry disagree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from quicack.qlog import read_qlog
from quicack.testbed import browsers
from quicack.testbed.client_registry import CLIENTS, Browser, CargoBuild, GoBuild
from quicack.testbed.clients import TESTBED_CLIENTS, client_executable, implementations_dir
from quicack.testbed.server_programs import TESTBED_SERVERS

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "workflow" / "schemas" / "testbed.schema.yaml"
BUILD_SH = REPO / "src" / "implementations" / "build.sh"
REGISTRY = REPO / "src" / "quicack" / "testbed" / "client_registry.py"
RECORDINGS = REPO / "tests" / "data"
BUILT = [client for client in CLIENTS if isinstance(client.program, (GoBuild, CargoBuild))]
WITH_QLOG = [client for client in CLIENTS if client.qlog is not None]


def _block_enum(key: str) -> list[str]:
    block = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))["definitions"]["block"]["properties"][key]
    return block["items"]["enum"] if "items" in block else block["enum"]


def test_the_config_schema_offers_the_registry_clients():
    """The schema's enum is written by hand (Snakemake validates the config with it): it must name exactly the
    registry's clients."""
    assert sorted(_block_enum("clients")) == sorted(TESTBED_CLIENTS), (
        f"workflow/schemas/testbed.schema.yaml clients enum: write [{', '.join(TESTBED_CLIENTS)}]")


@pytest.mark.parametrize("key", ["server", "servers"])
def test_the_config_schema_offers_the_testbed_servers(key):
    assert sorted(_block_enum(key)) == sorted(TESTBED_SERVERS)


def _dry_run(*impls: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(BUILD_SH), "--dry-run", *impls], capture_output=True, text=True,
                          encoding="utf-8", timeout=60, check=False)


def _would_build(stdout: str) -> list[str]:
    return [line.split()[2] for line in stdout.splitlines() if line.startswith("would build ")]


def test_build_sh_builds_every_registry_client_where_the_testbed_looks_for_it():
    result = _dry_run()
    assert result.returncode == 0, result.stderr
    expected = [client.program.binary for client in BUILT]  # type: ignore[union-attr]
    assert _would_build(result.stdout) == [*expected, "scanner/bin/scanner"]
    for client in BUILT:
        assert client_executable(client.name) in (None, implementations_dir() / client.program.binary)  # type: ignore[union-attr]


@pytest.mark.parametrize("client", BUILT, ids=[c.name for c in BUILT])
def test_build_sh_builds_one_registry_client_by_its_name(client):
    result = _dry_run(client.name)
    assert result.returncode == 0, result.stderr
    assert _would_build(result.stdout) == [client.program.binary]


def test_build_sh_refuses_a_client_the_registry_does_not_have():
    result = _dry_run("msquic-from-the-future")
    assert result.returncode == 1
    assert (
        "unknown client 'msquic-from-the-future' (known: " + " ".join(c.name for c in BUILT) + " scanner)"
        in result.stderr
    )


def test_the_registry_runs_as_a_script_on_the_standard_library_alone():
    """build.sh runs it with python3 before (or without) the package is installed: isolated mode, no site-packages."""
    result = subprocess.run([sys.executable, "-I", "-S", str(REGISTRY), "builds"], capture_output=True, text=True,
                            encoding="utf-8", timeout=60, check=True)
    kinds = {"GoBuild": "go", "CargoBuild": "cargo", "PythonScript": "python", "DebianProgram": "debian"}
    expected = [(kinds[type(c.program).__name__], c.name) for c in CLIENTS if type(c.program).__name__ in kinds]
    assert [tuple(line.split()[:2]) for line in result.stdout.splitlines()] == expected


def _recorded_client_qlog(name: str) -> Path:
    """A qlog this client wrote in a recorded run (tests/data/<...>/<server>_<client>/<case>/<rep>/client/qlog/)."""
    found = sorted(RECORDINGS.glob(f"**/*_{name}/*/*/client/qlog/*"))
    if not found:
        pytest.fail(f"no recorded qlog of the {name} client under {RECORDINGS} (tests/tools/record_loopback.py)")
    return found[0]


@pytest.mark.parametrize("client", WITH_QLOG, ids=[c.name for c in WITH_QLOG])
def test_the_qlog_reader_names_each_client_as_the_registry_says(client):
    path = _recorded_client_qlog(client.name)
    endpoint = read_qlog(path, "r", "client").endpoints.row(0, named=True)
    assert (endpoint["implementation"], endpoint["dialect"]) == (client.qlog.implementation, client.qlog.dialect), path


def test_the_browsers_are_those_the_browser_driver_drives():
    assert [c.name for c in CLIENTS if isinstance(c.program, Browser)] == list(browsers.BROWSERS)
