"""The emulated scan's planning, truth and SNI parsing, without root (the recording itself: test_testbed_scan.py)."""

from __future__ import annotations

import copy
import datetime as dt
import struct
from pathlib import Path

import jsonschema
import pytest

from quicack.testbed.client_hello import client_hello_server_name
from quicack.testbed.scan_plan import _apportion, check, load_config, plan, validate_section
from quicack.testbed.scan_truth import truth_rows

REPO = Path(__file__).resolve().parents[1]
CONFIGS = [REPO / "config" / "testbed_scan.yaml", REPO / "config" / "testbed_scan_ci.yaml"]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_configs_validate_and_route_every_prefix(path: Path) -> None:
    check(plan(load_config(path)))


def test_schema_rejects_unknown_site_kind() -> None:
    cfg = copy.deepcopy(load_config(CONFIGS[1]))
    cfg["sites"]["quic-go"]["kind"] = "nginx"
    with pytest.raises(jsonschema.ValidationError):
        validate_section(cfg)


def test_a_prefix_must_lead_to_one_site_per_vantage_point() -> None:
    cfg = copy.deepcopy(load_config(CONFIGS[1]))
    cfg["routes"]["vp-a"]["cdn-ham"] = 5.0  # vp-a would reach the anycast prefix at two PoPs
    with pytest.raises(ValueError, match="exactly one site"):
        check(plan(cfg))


def test_apportion_keeps_small_shares() -> None:
    labels = _apportion({"A": 0.45, "B": 0.15, "C": 0.1, "D": 0.1, "E": 0.15, "F": 0.05}, 40)
    assert {x: labels.count(x) for x in "ABCDEF"} == {"A": 18, "B": 6, "C": 4, "D": 4, "E": 6, "F": 2}


def test_day_night_activity_and_folder_names() -> None:
    p = plan(load_config(CONFIGS[0]))
    day = dt.datetime(2024, 8, 10, tzinfo=dt.UTC)
    # Hamburg is UTC+2: quietest at 02:00 UTC (04:00 local), busiest at 14:00 UTC.
    assert p.activity(day.replace(hour=2), 2) == pytest.approx(p.night_activity)
    assert p.activity(day.replace(hour=14), 2) == pytest.approx(1.0)
    assert p.store_delay_ms(day.replace(hour=16)) == pytest.approx(p.store["delay_ms_day"])
    series = [m for m in p.measurements if m.kind == "cloudflare_series"]
    assert [m.folder_name for m in series[:2]] == ["2024-08-10T00:00:00,000000000+00:00",
                                                   "2024-08-10T01:00:00,000000000+00:00"]  # fmt: skip
    assert len({m.folder_name for m in p.measurements}) == len(p.measurements) == 3 + 24


def _client_hello(sni: str) -> bytes:
    name = sni.encode()
    server_name = struct.pack("!HBH", len(name) + 3, 0, len(name)) + name
    extensions = struct.pack("!HH", 43, 3) + b"\x02\x03\x04" + struct.pack("!HH", 0, len(server_name)) + server_name
    body = (b"\x03\x03" + bytes(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
            + struct.pack("!H", len(extensions)) + extensions)  # fmt: skip
    return b"\x01" + len(body).to_bytes(3, "big") + body


def test_client_hello_server_name() -> None:
    hello = _client_hello("discord.test")
    assert client_hello_server_name(hello) == "discord.test"
    assert client_hello_server_name(hello[:60]) is None  # continues in a later CRYPTO frame
    assert client_hello_server_name(b"\x02" + hello[1:]) is None  # a ServerHello


def test_truth_from_frontend_decisions() -> None:
    p = plan(load_config(CONFIGS[1]))
    series = next(m for m in p.measurements if m.kind == "cloudflare_series")
    vp = p.vantage_points[1]  # vp-b: the padded PoP
    snis = [d.sni for d in series.domains]  # busy, rare, gone, own, own
    decisions = [
        {"scid": "0000000000000000", "cache": "hit", "expected": "coalesced", "padded": False, "fetch": "none"},
        {"scid": "0000000000000001", "cache": "miss", "expected": "iack", "padded": True, "fetch": "started"},
        {"scid": "0000000000000002", "cache": "miss", "expected": "iack", "padded": True, "fetch": "started"},
        {"scid": "0000000000000002", "error": "certificate fetch failed"},
        {"scid": "0000000000000003", "cache": "miss", "expected": "iack", "padded": True, "fetch": "started"},
    ]
    rows = truth_rows(p, series, vp, decisions, {"busy.test"}, 3.0, 0.0)
    assert [r["sni"] for r in rows] == snis
    assert [r["expected_class"] for r in rows] == ["coalesced", "iack", "no_sh", "iack", "unknown"]
    assert [r["cache_state"] for r in rows] == ["hit", "miss_started", "miss_started", "miss_started", "no_decision"]
    assert rows[0]["warmed_by_load"] == "true" and rows[1]["padded"] == "true" and rows[0]["pop_iata"] == "HAM"
