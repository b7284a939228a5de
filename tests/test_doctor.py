"""`quicack doctor` and `quicack --version` say what this installation runs with, as the readers select it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from quicack.pcap.decoder_engine import select_engine
from quicack.qlog.reader_engine import lane_class
from quicack.testbed.clients import TESTBED_CLIENTS, client_executable


def quicack(*args: str, **environment: str) -> str:
    done = subprocess.run([sys.executable, "-m", "quicack.cli", *args], capture_output=True, text=True, check=True,
                          env={**os.environ, **environment}, timeout=120, encoding="utf-8")  # fmt: skip
    return done.stdout


def test_version_names_the_engines_the_readers_select():
    line = quicack("--version")
    assert line.startswith("quicack 0.1.0 (")
    assert f"capture decoder: {select_engine().name}" in line
    assert f"qlog reader: {'compiled' if lane_class() else 'python'}" in line


def test_an_engine_chosen_by_the_environment_is_reported_as_chosen():
    line = quicack("--version", QUICACK_PCAP_ENGINE="python", QUICACK_QLOG_ENGINE="python")
    assert "capture decoder: python" in line and "qlog reader: python" in line
    report = quicack("doctor", QUICACK_PCAP_ENGINE="python")
    assert "chosen by QUICACK_PCAP_ENGINE=python" in report


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_doctor_reports_tshark_and_every_testbed_client_as_found_or_not():
    report = quicack("doctor")
    tshark = subprocess.run(
        ["tshark", "--version"], capture_output=True, text=True, check=True, encoding="utf-8"
    ).stdout.splitlines()[0]
    assert tshark.strip() in report
    lines = {
        line.split()[0] + " " + line.split()[1]: line
        for line in report.splitlines()
        if line.startswith("  ") and len(line.split()) > 2
    }
    assert TESTBED_CLIENTS
    for client in TESTBED_CLIENTS:
        line = lines[f"{client} client"]
        path = client_executable(client)
        assert (f"found  [{path}]" in line) if path else ("not found" in line), line
