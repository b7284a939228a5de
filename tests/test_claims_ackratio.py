"""The ACK-ratio papers' claims: formula claims on any data, measured ones from recorded transfers (loopback
runs of real implementations), every difference explained."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from quicack.claims.ackratio_claims import CLAIMS, REFERENCES, ackratio_claims
from quicack.provenance import DatasetDescription
from quicack.qlog import read_qlog
from quicack.reference import paper_claims

LOOPBACK = Path(__file__).parent / "data" / "loopback"
DESCRIPTION = DatasetDescription(name="loopback", kind="emulated", title="loopback recordings")


def loopback_tables(*runs: str) -> dict[str, pl.DataFrame]:
    """runs / packets / frames of recorded loopback runs (client qlog), as the pipeline would hold them."""
    rows, packets, frames = [], [], []
    for run in runs:
        folder = LOOPBACK / run
        meta = json.loads((folder / "run.json").read_text())
        (qlog,) = (folder / "client" / "qlog").iterdir()
        log = read_qlog(qlog, run_id=run, vantage="client")
        policy = ("ack_ratio", "ack_delay_ms", "ack_delay_rtt_fraction", "ack_reordering")
        rows.append({"run_id": run, **{k: meta.get(k) for k in ("client_impl", "status", "file_bytes", "path_profile", *policy)}})
        packets.append(log.packets)
        frames.append(log.frames)
    return {"runs": pl.DataFrame(rows), "packets": pl.concat(packets), "frames": pl.concat(frames)}


@pytest.mark.parametrize("paper", sorted(CLAIMS))
def test_every_claim_has_a_value_or_says_why_not_and_differences_are_explained(paper: str) -> None:
    tables = loopback_tables("quic-go_quic-go/transfer_1MB/1", "ngtcp2_ngtcp2/transfer_1MB/1")
    claims = ackratio_claims(paper, tables, DESCRIPTION).artefact
    # the claims file's rows and the paper tables' cells (quicack.claims.table_cells)
    assert set(claims["claim_id"]) == set(REFERENCES[paper]().reference["claim_id"]) >= set(paper_claims(paper)["claim_id"])
    differing = claims.filter(pl.col("verdict") == "differ")
    assert (differing["explanation"].str.strip_chars() != "").all(), differing.select("claim_id", "ours").rows()
    assert claims.filter(pl.col("verdict") == "n/a")["ours"].str.starts_with("not measured").all()


def test_measured_ack_ratio_and_sizes_from_recorded_transfers() -> None:
    tables = loopback_tables("quic-go_quic-go/transfer_1MB/1")
    claims = ackratio_claims("ackfreq22", tables, DESCRIPTION).artefact
    quic_go = claims.filter(pl.col("claim_id") == "ackfreq22-tab02-quic-go-ar").row(0, named=True)
    assert quic_go["verdict"] == "agree" and quic_go["runs"] == 1 and quic_go["ours_low"] == 2.0
    sizes = claims.filter(pl.col("claim_id") == "ackfreq22-5.2-client-ack-sizes").row(0, named=True)
    assert sizes["ours_low"] == 61.0 and sizes["verdict"] == "agree"  # quic-go's ACK-only packets on loopback
    # aioquic has no 1 MB run here: its claim says so instead of inventing a number
    aioquic = claims.filter(pl.col("claim_id") == "ackfreq22-tab02-aioquic-ar").row(0, named=True)
    assert aioquic["verdict"] == "n/a" and aioquic["runs"] == 0
