"""The two engines of the capture decoder (quicack.pcap.engine) write the same tables on every real capture.

The compiled one (quicack_core, built from rust/quicack_core by install.sh) is what the other test_pcap_* modules
decode with when it is installed; here every capture of the test data and of the embedded dataset is decoded
with both, once with the default batch size and once with tiny batches (batch boundaries, the pcap lane's
budget and its hand-over to the Python decoder), and the tables must be equal, value for value and row for row.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from test_pcap_support import DATA, Capture, find_captures

from quicack.pcap.decode import decode_capture
from quicack.pcap.engine import compiled_engine, select_engine

pytestmark = pytest.mark.skipif(compiled_engine() is None, reason="quicack_core is not built (install.sh builds it)")
SAMPLE = Path(__file__).parent.parent / "data" / "sample" / "raw"
TABLES = ("datagrams", "packets", "frames", "ingest_issues")


def _tables(capture: Capture, engine: str, batch_rows: int) -> dict[str, pl.DataFrame]:
    batches = list(decode_capture(capture.path, list(capture.keylogs) or None, "r", "v", batch_rows, engine=engine))
    return {name: pl.concat([getattr(batch, name) for batch in batches]) for name in TABLES}


def _assert_same(capture: Capture, batch_rows: int) -> None:
    python, compiled = (_tables(capture, engine, batch_rows) for engine in ("python", "compiled"))
    for name in TABLES:
        assert python[name].equals(compiled[name]), f"{capture.path}: {name} differs (batch_rows={batch_rows})"


@pytest.mark.parametrize("capture", find_captures(True, DATA, include_empty=True), ids=lambda c: c.name)
@pytest.mark.parametrize("batch_rows", [32_768, 40])
def test_engines_agree_on_test_captures(capture: Capture, batch_rows: int) -> None:
    _assert_same(capture, batch_rows)


def test_engines_agree_on_the_embedded_dataset() -> None:
    captures = find_captures(True, SAMPLE, include_empty=True)
    assert len(captures) > 700
    for capture in captures:
        _assert_same(capture, 32_768)


def test_engine_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUICACK_PCAP_ENGINE", raising=False)
    assert select_engine().name == "compiled"
    monkeypatch.setenv("QUICACK_PCAP_ENGINE", "python")
    assert select_engine().name == "python"
    assert select_engine("compiled").name == "compiled"
    with pytest.raises(ValueError, match="unknown capture decoder engine"):
        select_engine("fortran")
