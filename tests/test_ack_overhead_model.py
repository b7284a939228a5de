"""The ACK-size formulas (quicack.models.ack_overhead) against the specifications, and the papers' formula tables
recomputed from them: exactly the cells we know to differ differ, each with its explanation.

Formulas only: nothing here is measured, so no recorded data is involved.
"""

from __future__ import annotations

import polars as pl
import pytest

from quicack.figures.ack_overhead_tables import (
    ackfreq22_tab03_min_ack_overhead,
    rethink_tab1_ack_functions,
    rethink_tab2_ack_bytes_per_packet,
    tcpquic_tab_anatomy,
    tcpquic_tab_rate,
)
from quicack.models import ack_overhead as model


def test_smallest_acks_as_the_specifications_give_them() -> None:
    assert model.tcp_ack().size == 40 and model.tcp_ack(model.IPV6_HEADER).size == 60
    assert model.quic_ack().size == 51 and model.quic_ack(model.IPV6_HEADER).size == 71  # ackfreq22 §5.2
    assert model.tcp_ack(sack_blocks=1).size == 52  # one SACK block: 2 + 8 B, padded to 12
    assert model.quic_ack(extra_ranges=1).size == 53


def test_tcp_options_cannot_exceed_forty_bytes() -> None:
    assert model.max_sack_blocks(timestamps=True) == 3 and model.max_sack_blocks(timestamps=False) == 4
    assert model.largest_tcp_ack().size == 80
    with pytest.raises(ValueError, match="exceed"):
        model.tcp_ack(timestamps=True, sack_blocks=4)


def test_rohc_compresses_the_outermost_headers() -> None:
    assert (
        model.rohc(model.quic_ack(model.IPV6_HEADER), "quic") == 26
    )  # ackfreq22: "reducing a 71B QUIC ACK packet to 26B"
    assert model.rohc(model.tcp_ack(), "tcp") == 4
    vpn = model.over_vpn(model.tcp_ack())
    assert vpn.size == 108 and model.rohc(vpn, "tcp") == 108 - 28 + model.ROHC_UDP_IP


def _differing(table: pl.DataFrame, keys: list[str]) -> set[tuple[str, ...]]:
    return set(table.filter(pl.col("agrees") == False).select(keys).iter_rows())  # noqa: E712


def test_ackfreq22_table3_recomputed() -> None:
    table = ackfreq22_tab03_min_ack_overhead().artefact
    assert table.height == 24
    assert _differing(table, ["row", "column"]) == {
        ("VPN v4 TCP", "rohc"), ("VPN v4 QUIC", "tcp_pep"), ("VPN v4 QUIC", "quic_ar10"), ("VPN v4 QUIC", "rohc")
    }  # fmt: skip
    assert (table.filter(pl.col("agrees") == False)["explanation"] != "").all()  # noqa: E712


def test_rethink_table2_recomputed() -> None:
    table = rethink_tab2_ack_bytes_per_packet().artefact
    assert _differing(table, ["protocol", "case"]) == {("TCP", "max_loss"), ("QUIC", "max_no_loss")}
    assert table.filter(pl.col("protocol") == "RTCP XR")["agrees"].null_count() == 4  # cited, not computed


def test_tcpquic_anatomy_and_rate_recomputed() -> None:
    anatomy = tcpquic_tab_anatomy().artefact
    # truncated percentages agree; the 50 B / 72 B QUIC sizes, the 1500 B TCP divisor and 84 B do not
    assert _differing(anatomy, ["case", "bound"]) == {
        ("quic_cumulative", "min"), ("quic_cumulative", "max"), ("tcp_loss", "min"), ("tcp_loss", "max"),
        ("quic_loss", "min"),
    }  # fmt: skip
    rate = tcpquic_tab_rate().artefact
    assert rate.height == 12 and (rate["explanation"] != "").all()
    # the 250/3 Mbit/s path's return link cannot carry even TCP's ACKs at full forward rate
    flagged = set(rate.filter(pl.col("exceeds_return_link")).select("case", "forward_mbps").iter_rows())
    assert ("tcp_no_loss", 250.0) in flagged and ("tcp_no_loss", 10.0) not in flagged
    assert all(("quic_ar2_loss", forward) in flagged for forward in (10.0, 50.0, 250.0))  # unlimited


def test_rethink_table1_is_cited_as_printed() -> None:
    rendered = rethink_tab1_ack_functions()
    assert rendered.model and "Cited" in rendered.model_note
    assert rendered.artefact.columns == ["use_case", "TCP", "SCTP", "DCCP", "RTCP", "QUIC"]
    assert rendered.artefact.height == 8
