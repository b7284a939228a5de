"""Markdown summary of a raw testbed dataset: runs per configuration, outcome, calibrated drop lists, size.

python -m quicack.testbed.summarize data/sample/raw
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def load_runs(raw: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(raw.rglob("run.json"))]


def _size(raw: Path) -> int:
    return sum(p.stat().st_size for p in raw.rglob("*") if p.is_file())


def summary_markdown(raw: Path) -> str:
    runs = load_runs(raw)
    rows: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        rows[
            (
                r.get("server_impl", "aioquic"),
                r["client_impl"],
                r["scenario"],
                r["mode"],
                r["rtt_ms"],
                r["file_name"],
                r["app_protocol"],
            )
        ].append(r)
    lines = [
        f"{len(runs)} runs, {sum(r['status'] == 'ok' for r in runs)} ok, {_size(raw) / 1e6:.1f} MB on disk.",
        "",
        "| server | client | scenario | mode | RTT ms | file | app | ok / runs | drop to client | drop to server | "
        "failures |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (server, client, scen, mode, rtt, file, app), rs in sorted(rows.items(), key=lambda kv: tuple(map(str, kv[0]))):
        ok = sum(r["status"] == "ok" for r in rs)
        dc = "_".join(map(str, rs[0]["drop_to_client"])) or "–"
        ds = "_".join(map(str, rs[0]["drop_to_server"])) or "–"
        fails = "; ".join(sorted({(r["failure_reason"] or "")[:60] for r in rs if r["status"] != "ok"}))
        lines.append(
            f"| {server} | {client} | {scen} | {mode or '–'} | {rtt:g} | {file} | {app} | {ok} / {len(rs)} | {dc} | "
            f"{ds} | {fails} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path)
    print(summary_markdown(ap.parse_args().raw))


if __name__ == "__main__":
    main()
