"""The per-connection summary of a one-file command's folder (`derive_stage.write_folder_connections`, written by
`quicack qlog` and `quicack pcap`): the `connections` table `derive_tables` computes, without the derived tables it
does not need (the ACK runs and breakdowns cost `quicack pcap` more CPU than the decoding, and most of its memory)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from quicack.cli import main
from quicack.models import recovery
from quicack.schema import TABLES
from quicack.stages import derive_stage
from tests.conftest import QLOG_FIXTURES


def test_folder_connections_are_derive_tables_ones_without_the_other_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["qlog", str(QLOG_FIXTURES / "aioquic"), "--out", str(tmp_path)]) == 0
    read = {
        name: TABLES[name].conform(pl.read_parquet(path))
        if (path := tmp_path / f"{name}.parquet").is_file()
        else TABLES[name].empty()
        for name in derive_stage.DERIVE_INPUTS
    }
    expected = derive_stage.derive_tables(read, recovery.RecoveryParams())["connections"]
    assert expected.height >= 2 and expected["first_rtt_ms"].is_not_null().all()

    def not_needed(*_args, **_kwargs):
        raise AssertionError("not a part of the connections summary")

    for name in ("quic_ack_runs", "tcp_ack_runs", "ack_breakdown", "estimator_agreement"):
        monkeypatch.setattr(derive_stage, name, not_needed)
    (tmp_path / "connections.parquet").unlink()
    assert derive_stage.write_folder_connections(tmp_path) == expected.height
    assert pl.read_parquet(tmp_path / "connections.parquet").equals(TABLES["connections"].conform(expected))
