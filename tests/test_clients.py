"""Each built QUIC client really downloads a file from the testbed's aioquic server on loopback.

No network namespaces or root needed: server and client talk over 127.0.0.1, on a port in
4433-4499 (the range reserved for the client tests and loopback fixtures).
A client that is not built is skipped with the reason; one that is built and fails, fails.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quicack.testbed.clients import (
    CHROMIUM_NETLOG,
    H3,
    HQ,
    KNOWN_IMPLS,
    TESTBED_CLIENTS,
    ClientRequest,
    client_command,
    client_executable,
    client_versions,
    exit_grace_s,
    exit_status_is_reliable,
    preferred_protocol,
    supported_protocols,
    writes_qlog,
)
from quicack.testbed.files import file_bytes

FILE_NAME = "10KB"
PORT_RANGE = range(4440, 4460)


def _free_udp_port() -> int:
    for port in PORT_RANGE:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free UDP port in {PORT_RANGE.start}-{PORT_RANGE.stop - 1} on 127.0.0.1")


@pytest.fixture(scope="module")
def aioquic_server(tmp_path_factory: pytest.TempPathFactory):
    """The testbed server (plain mode) serving the seeded files; yields its base URL."""
    workdir = tmp_path_factory.mktemp("server")
    ready_file = workdir / "ready.json"
    port = _free_udp_port()
    log = (workdir / "server.log").open("w", encoding="utf-8")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "quicack.testbed.iack_wfc_server",
            "--host", "127.0.0.1", "--port", str(port), "--mode", "none",
            "--www", str(workdir / "www"), "--ready-file", str(ready_file),
        ],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not ready_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"testbed server did not start: {(workdir / 'server.log').read_text(encoding='utf-8')}")
            time.sleep(0.05)
        yield f"https://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


CASES = [(impl, protocol) for impl in KNOWN_IMPLS for protocol in sorted(supported_protocols(impl))]


@pytest.mark.slow
@pytest.mark.parametrize(("impl", "app_protocol"), CASES, ids=[f"{i}-{p}" for i, p in CASES])
def test_client_downloads_file_with_keylog_and_qlog(aioquic_server: str, tmp_path: Path, impl: str, app_protocol: str):
    if client_executable(impl) is None:
        pytest.skip(
            f"{impl} client is not built/installed (run src/implementations/build.sh; ngtcp2: apt-get install "
            "ngtcp2-client)"
        )
    req = ClientRequest(
        impl=impl,
        url=f"{aioquic_server}/{FILE_NAME}",
        app_protocol=app_protocol,
        download_dir=tmp_path / "download",
        keylog_path=tmp_path / "keys.log",
        qlog_dir=tmp_path / "qlog",
        timeout_s=20,
    )
    argv, extra_env = client_command(req)
    result = subprocess.run(
        argv,
        env=os.environ | extra_env,
        capture_output=True,
        text=True,
        timeout=req.timeout_s + exit_grace_s(impl),
        cwd=tmp_path,
        encoding="utf-8",
    )
    assert result.returncode == 0, f"{impl} exited {result.returncode}: {result.stderr[-2000:]}"

    downloaded = req.download_dir / FILE_NAME
    assert downloaded.is_file(), f"{impl} saved nothing at {downloaded}; files: {list(tmp_path.rglob('*'))}"
    expected = hashlib.sha256(file_bytes(FILE_NAME)).hexdigest()
    assert hashlib.sha256(downloaded.read_bytes()).hexdigest() == expected

    keylog = req.keylog_path.read_text(encoding="utf-8")
    assert "CLIENT_HANDSHAKE_TRAFFIC_SECRET " in keylog
    assert "SERVER_TRAFFIC_SECRET_0 " in keylog

    if not writes_qlog(impl):
        # Chromium: no qlog, its NetLog (complete JSON once it has quit) beside the keylog instead.
        netlog = req.keylog_path.parent / CHROMIUM_NETLOG
        assert json.loads(gzip.decompress(netlog.read_bytes()))["events"]
        return
    qlogs = [p for p in req.qlog_dir.iterdir() if p.is_file() and p.stat().st_size > 0]
    assert qlogs, f"{impl} wrote no qlog in {req.qlog_dir}"
    header = json.loads(
        qlogs[0].read_text(encoding="utf-8").lstrip("\x1e").splitlines()[0]
        if qlogs[0].suffix == ".sqlog"
        else qlogs[0].read_text(encoding="utf-8")
    )
    assert "qlog_version" in header or "file_schema" in header


@pytest.mark.slow
@pytest.mark.parametrize("impl", KNOWN_IMPLS)
def test_client_without_server_gives_up_in_time_and_saves_nothing(tmp_path: Path, impl: str):
    if client_executable(impl) is None:
        pytest.skip(f"{impl} client is not built/installed")
    port = _free_udp_port()  # nobody listens there
    req = ClientRequest(
        impl, f"https://127.0.0.1:{port}/{FILE_NAME}", preferred_protocol(impl),
        tmp_path / "download", tmp_path / "keys.log", tmp_path / "qlog", timeout_s=1.5,
    )  # fmt: skip
    argv, extra_env = client_command(req)
    started = time.monotonic()
    # A browser may take its quit budget after the timeout (exit_grace_s beyond the others' 10 s).
    allowed = req.timeout_s + 3 + exit_grace_s(impl) - exit_grace_s("aioquic")
    result = subprocess.run(
        argv,
        env=os.environ | extra_env,
        capture_output=True,
        text=True,
        timeout=30 + allowed,
        cwd=tmp_path,
        encoding="utf-8",
    )
    assert time.monotonic() - started < allowed, f"{impl} ignored its timeout"
    assert not (req.download_dir / FILE_NAME).exists()
    if exit_status_is_reliable(impl):
        assert result.returncode != 0
    else:
        assert result.returncode == 0, "gtlsclient now reports failures: update exit_status_is_reliable"


def test_client_command_rejects_protocol_the_client_lacks(tmp_path: Path):
    req = ClientRequest("go-x-net", "https://127.0.0.1:4433/10KB", H3, tmp_path, tmp_path / "k", tmp_path / "q")
    with pytest.raises(ValueError, match="does not support 'h3'"):
        client_command(req)


def test_client_command_rejects_url_without_port(tmp_path: Path):
    req = ClientRequest("aioquic", "https://127.0.0.1/10KB", HQ, tmp_path, tmp_path / "k", tmp_path / "q")
    with pytest.raises(ValueError, match="host>:<port>"):
        client_command(req)


def test_unknown_impl_is_an_error():
    with pytest.raises(ValueError, match="unknown client implementation"):
        supported_protocols("msquic-from-the-future")


def test_preferred_protocol_is_h3_where_supported():
    assert preferred_protocol("quic-go") == H3
    assert preferred_protocol("go-x-net") == HQ


def test_ngtcp2_gets_keylog_through_environment(tmp_path: Path):
    if client_executable("ngtcp2") is None:
        pytest.skip("ngtcp2 client (gtlsclient) is not installed")
    req = ClientRequest(
        "ngtcp2", "https://127.0.0.1:4433/10KB", H3, tmp_path / "d", tmp_path / "keys.log", tmp_path / "q"
    )
    argv, env = client_command(req)
    assert env == {"SSLKEYLOGFILE": str(tmp_path / "keys.log")}
    assert f"--qlog-dir={tmp_path / 'q'}" in argv
    # gtlsclient refuses to start when its qlog directory is missing.
    assert (tmp_path / "q").is_dir()


def test_versions_cover_every_available_client():
    versions = client_versions()
    available = {impl for impl in TESTBED_CLIENTS if client_executable(impl) is not None}
    assert set(versions) == available and "linux-tcp" in versions
    assert all(versions.values())
