"""What folder names say about a run, and the names the testbed gives its runs.

quicack's runs live in the QUIC Interop Runner layout (``quicack.layout.runs``) with
``<testcase> = <scenario>-<mode>-rtt<rtt>ms-<file>-<app>`` (e.g. ``noloss-iack-rtt9ms-10KB-h3``).

The imc24 artifact (a fork of the QIR) encodes the settings in the name of the top-level log folder instead:
``logs_<k=v,k=v,...>_<YYYY-MM-DDTHH:MM:SS>/<server>_<client>/<testcase>/<repetition>/...``, e.g.
``logs_delay=10ms,c=aioquic,drop-to-client=2_3,drop-to-server=,file_size=10KB,instant-ack=1_2024-08-14T01:43:00``.
There ``delay`` is the one-way delay, ``instant-ack`` marks IACK and ``delay-first-packet`` marks WFC
(``extract_key_val`` and ``folder_to_df`` in its ``preprocess_qlog.py``). `parse_run_folder` reads both.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quicack.layout.runs import RUN_JSON

_TESTCASE_RE = re.compile(
    # The path: the RTT, or the name of a path profile (data/reference/path_profiles.csv), which brings its own.
    # Then the server's sender settings when set, then the receiver's ACK policy: TCP runs (app tcp) carry an ACK
    # ratio alone (the kernel or the router sets it); ngtcp2's own delay reads 'dimpl'.
    r"^(?P<scenario>[a-z0-9_]+)-(?P<mode>iack|wfc|none)"
    r"-(?:rtt(?P<rtt>[0-9.]+)ms|(?P<profile>[a-z0-9]+(?:-[a-z0-9]+)*?))"
    r"-(?P<file>[0-9]+[KMG]B)-(?P<app>h3|hq|tcp)"
    r"(?:-cc(?P<congestion_control>[a-z0-9]+)-(?P<pacing>paced|unpaced))?"
    r"(?:-ar(?P<ack_ratio>[0-9]+)"
    r"(?:-d(?:(?P<ack_delay>[0-9.]+)(?P<ack_delay_unit>ms|rtt)|(?P<own_ack_delay>impl))-(?P<reordering>D|NR|3A))?)?$"
)
# Scenarios recorded with the server's ServerHello held to the paper's server stack delay (quicack's testbed:
# ``<scenario>_paper_stack``, runs.server_hello_hold_ms): claims compare them under the paper's conditions.
PAPER_STACK_SUFFIX = "_paper_stack"
# Scenarios recorded under the paper's conditions as a whole (issue 34): each client's ServerHello held to the stack
# delay imc24 §4.1 gives for it *and* every implementation set as the paper's runs had it
# (data/reference/implementation_conditions.csv). The primary imc24 claims compare these.
PAPER_CONDITIONS_SUFFIX = "_paper"
_IMC24_TS_RE = re.compile(r"_(\d{4}-\d{2}-\d{2}T[\d:]+)$")
_SIZE_RE = re.compile(r"^(?P<n>[0-9.]+)\s*(?P<u>[KMG]?B)$", re.IGNORECASE)
_UNITS = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}


@dataclass(frozen=True)
class RunLocation:
    """A run's place in the raw layout."""

    server: str
    client: str
    testcase: str
    repetition: int

    def relative(self) -> Path:
        return Path(f"{self.server}_{self.client}") / self.testcase / str(self.repetition)


def testcase_name(
    scenario: str, mode: str, rtt_ms: float, file_name: str, app_protocol: str, ack_policy: str | None = None,
    path_profile: str | None = None, sender: str | None = None,
) -> str:
    """``<scenario>-<mode>-rtt<RTT>ms-<file>-<app>``, then ``-<sender_label>`` when the server's congestion control
    or pacing was set and ``-<ack_policy_label>`` when the receiver's ACK policy was. A path profile names the path
    in place of the RTT: two profiles may share an RTT (rethink's return path of 1.5 Mbit/s or 100 kbit/s)."""
    path = path_profile or f"rtt{rtt_ms:g}ms"
    name = f"{scenario}-{mode}-{path}-{file_name}-{app_protocol}"
    return "-".join(part for part in (name, sender, ack_policy) if part)


def sender_label(congestion_control: str | None, pacing: bool) -> str:
    """The server's sender settings in a folder name: ``ccreno-unpaced``, ``cccubic-paced`` (``ccdefault`` = the
    implementation's own congestion controller)."""
    return f"cc{congestion_control or 'default'}-{'paced' if pacing else 'unpaced'}"


def ack_policy_label(ack_ratio: int, ack_delay_ms: float | None, ack_delay_rtt_fraction: float | None,
                     reordering: str) -> str:
    """A receiver ACK policy in a folder name: ``ar10-d25ms-D`` (AR 10, 25 ms, reordering policy D) or
    ``ar10-d0.25rtt-3A`` (ACK delay a quarter of the smoothed RTT) or ``ar10-dimpl-D`` (the receiver
    implementation's own ACK delay)."""
    if ack_delay_ms is not None:
        delay = f"{ack_delay_ms:g}ms"
    elif ack_delay_rtt_fraction is not None:
        delay = f"{ack_delay_rtt_fraction:g}rtt"
    else:
        delay = "impl"
    return f"ar{ack_ratio}-d{delay}-{reordering}"


def file_size_bytes(text: str) -> int | None:
    """'10KB' -> 10240 (binary units, as the QIR generates files); '10' (MB, QIR's -q flag) -> None."""
    m = _SIZE_RE.match(text.strip())
    if not m:
        return None
    return int(float(m.group("n")) * _UNITS[m.group("u").upper()])


def _ms(text: str) -> float | None:
    t = text.strip().lower()
    if not t:
        return None
    for unit, factor in (("ms", 1.0), ("us", 0.001), ("s", 1000.0)):
        if t.endswith(unit):
            try:
                return float(t[: -len(unit)]) * factor
            except ValueError:
                return None
    try:
        return float(t)
    except ValueError:
        return None


def _indices(text: str) -> list[int]:
    return [int(p) for p in re.split(r"[_,]", text) if p.strip().isdigit()]


def parse_imc24_folder_name(name: str) -> dict[str, Any]:
    """Settings encoded in an imc24 artifact log folder name (see module docstring)."""
    body = name.split("_", 1)[1] if name.startswith("logs_") else name
    ts = _IMC24_TS_RE.search(body)
    timestamp = None
    if ts:
        timestamp = ts.group(1)
        body = body[: ts.start()]
    raw: dict[str, str] = {}
    for item in body.split(","):
        if "=" in item:
            k, v = item.split("=", 1)
            raw[k.strip()] = v.strip()
    iack = "instant-ack" in raw and "delay-first-packet" not in raw
    wfc = "delay-first-packet" in raw and "instant-ack" not in raw
    one_way = _ms(raw.get("delay", ""))
    out: dict[str, Any] = {
        "naming": "imc24",
        "settings": raw,
        "timestamp": timestamp,
        "mode": "iack" if iack else "wfc" if wfc else None,
        "one_way_delay_ms": one_way,
        "rtt_ms": one_way * 2 if one_way is not None else None,
        "drop_to_client": _indices(raw.get("drop-to-client", "")),
        "drop_to_server": _indices(raw.get("drop-to-server", "")),
        "file_size": raw.get("file_size"),
        "file_bytes": file_size_bytes(raw["file_size"]) if "file_size" in raw else None,
    }
    if "c" in raw:
        out["client_impl"] = raw["c"]
    if wfc:
        out["cert_delay_ms"] = _ms(raw["delay-first-packet"])
    elif iack:
        out["cert_delay_ms"] = _ms(raw.get("instant-ack-delay", ""))
    return out


def _parse_testcase(name: str) -> dict[str, Any]:
    m = _TESTCASE_RE.match(name)
    if not m:
        return {"testcase": name}
    return {
        "testcase": name,
        "scenario": m.group("scenario"),
        "mode": None if m.group("mode") == "none" else m.group("mode"),
        "rtt_ms": float(m.group("rtt")) if m.group("rtt") else None,
        "path_profile": m.group("profile"),
        "file_size": m.group("file"),
        "file_bytes": file_size_bytes(m.group("file")),
        "app_protocol": m.group("app"),
    } | _parse_sender(m) | _parse_ack_policy(m)


def _parse_sender(m: re.Match[str]) -> dict[str, Any]:
    if m.group("congestion_control") is None:
        return {}
    cc = m.group("congestion_control")
    return {"congestion_control": None if cc == "default" else cc, "pacing": m.group("pacing") == "paced"}


def _parse_ack_policy(m: re.Match[str]) -> dict[str, Any]:
    if m.group("ack_ratio") is None:
        return {}
    if m.group("ack_delay") is None and m.group("own_ack_delay") is None:  # a TCP run's 'ar<N>': the ratio only
        return {"ack_ratio": int(m.group("ack_ratio"))}
    delay = None if m.group("own_ack_delay") else float(m.group("ack_delay"))
    in_ms = m.group("ack_delay_unit") == "ms"
    return {
        "ack_ratio": int(m.group("ack_ratio")),
        "ack_delay_ms": delay if in_ms else None,
        "ack_delay_rtt_fraction": None if in_ms else delay,
        "ack_reordering": m.group("reordering"),
    }


def parse_run_folder(path: str | Path, read_run_json: bool = True) -> dict[str, Any]:
    """Settings of the run stored at `path` (a run folder or any file inside one), for either naming.

    Keys (present when known): naming ('quicack' or 'imc24'), server_impl, client_impl, testcase, scenario,
    mode ('iack'/'wfc'/None), rtt_ms, one_way_delay_ms, cert_delay_ms, file_size, file_bytes, app_protocol,
    drop_to_client, drop_to_server (1-based datagram indices), repetition, settings (imc24 raw key-values),
    run_json (the run.json content when the folder has one and ``read_run_json``; its values win). Without
    ``read_run_json`` the settings come from the folder names alone (quicack.stages.ingest reads run.json itself and
    comes here when it cannot).
    """
    p = Path(path)
    parts = list(p.parts)
    out: dict[str, Any] = {}
    # imc24: the settings live in a 'logs_...k=v...' ancestor.
    for i, part in enumerate(parts):
        if part.startswith("logs_") and "=" in part:
            out.update(parse_imc24_folder_name(part))
            below = parts[i + 1 :]
            if len(below) >= 1 and "_" in below[0]:
                out["server_impl"], client = below[0].split("_", 1)
                out.setdefault("client_impl", client)
            if len(below) >= 2:
                out["testcase"] = below[1]
                out.setdefault("scenario", below[1])
            if len(below) >= 3 and below[2].isdigit():
                out["repetition"] = int(below[2])
            return out
    # quicack: find the run folder (the one with run.json, or <server>_<client>/<testcase>/<rep>).
    run_dir = None
    for cand in [p, *p.parents]:
        if (cand / RUN_JSON).is_file():
            run_dir = cand
            break
    if run_dir is None:
        for cand in [p, *p.parents]:
            if cand.name.isdigit() and "_" in cand.parent.parent.name:
                run_dir = cand
                break
    out["naming"] = "quicack"
    if run_dir is None:
        return out
    out["repetition"] = int(run_dir.name) if run_dir.name.isdigit() else None
    out.update(_parse_testcase(run_dir.parent.name))
    sc = run_dir.parent.parent.name
    if "_" in sc:
        out["server_impl"], out["client_impl"] = sc.split("_", 1)
    rj = run_dir / RUN_JSON
    if read_run_json and rj.is_file():
        data = json.loads(rj.read_text(encoding="utf-8"))
        out["run_json"] = data
        for k in (
            "server_impl", "client_impl", "scenario", "mode", "rtt_ms", "cert_delay_ms", "file_bytes",
            "app_protocol", "drop_to_client", "drop_to_server", "repetition", "one_way_delay_ms",
        ):  # fmt: skip
            if k in data:
                out[k] = data[k]
    return out


_GROUP_RE = re.compile(r"^(?P<server>[^_/]+)_(?P<client>[^/]+)$")


def describe_run_id(run_id: str) -> dict[str, Any]:
    """What a run's place in the QIR layout says, for a run without run.json: server and client from the
    ``<server>_<client>`` folder, the test case below it, the repetition folder below that when there is one,
    and the folder above the pair, if any (``series``: the imc24 artifact's ``all-interop-servers/<day>/``
    keeps one QIR run per day). Keys are present only when known."""
    parts = run_id.split("/")
    repetition = int(parts[-1]) if len(parts) >= 3 and parts[-1].isdigit() else None
    names = parts[:-1] if repetition is not None else parts
    out: dict[str, Any] = {}
    if len(names) >= 2 and (pair := _GROUP_RE.match(names[-2])):
        out.update(
            server_impl=pair.group("server"), client_impl=pair.group("client"), testcase=names[-1], scenario=names[-1]
        )
        if len(names) >= 3:
            out["series"] = names[-3]
    elif names and (pair := _GROUP_RE.match(names[0])):
        out.update(server_impl=pair.group("server"), client_impl=pair.group("client"))
        if len(names) >= 2:
            out.update(testcase=names[1], scenario=names[1])
    if repetition is not None:
        out["repetition"] = repetition
    return out
