"""What a testbed run records of itself: run.json's body (the group's parameters, versions, timings, the
conditions set, how the recorder was scheduled), beside the run (quicack.testbed.run) that fills it in."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from quicack.layout import RunLocation
from quicack.testbed import netns, router
from quicack.testbed.clients import TCP, client_versions, confined_to_its_flow
from quicack.testbed.conditions import conditions_record, stack_record
from quicack.testbed.files import FILE_SIZES
from quicack.testbed.receiver_ack_control import ack_policy_control, tcp_ack_policy_record
from quicack.testbed.scenarios import RunGroup


@dataclass
class Timing:
    """When each step of a run happened (seconds on the monotonic clock), for run.json's timings."""

    marks: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        self.marks[name] = time.time()


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).parent, encoding="utf-8")  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _versions() -> dict[str, str]:
    try:
        return client_versions()
    except Exception as exc:  # a broken client build must not lose the run record
        return {"error": str(exc)}


def run_record(
    group: RunGroup,
    repetition: int,
    loc: RunLocation,
    served: Any,
    server_info: dict[str, Any],
    status: str,
    reason: str | None,
    client_exit: int | None,
    downloaded: dict[str, Any],
    impairment: dict[str, Any],
    timing: Timing,
    topo: netns.Topology,
    cleanup_problems: list[str],
    host: dict[str, Any] | None = None,
) -> dict[str, Any]:
    raw_path = loc.relative().as_posix()
    versions = _versions()
    t = timing.marks
    tcp = group.app_protocol == TCP
    policy = group.receiver_ack_policy
    quic_policy = None if tcp else policy
    hold_ms = group.server_hello_hold_ms if group.mode != "none" else None
    return {
        "run_id": f"{group.dataset}/{raw_path}",
        "dataset": group.dataset,
        "raw_path": raw_path,
        "client_impl": group.client,
        "client_version": versions.get(group.client),
        "server_impl": group.server,
        "server_version": server_info.get("server_version"),
        "mode": group.mode if group.mode != "none" else None,
        "scenario": group.scenario,
        "testcase": loc.testcase,
        "repetition": repetition,
        "rtt_ms": group.rtt_ms,
        "one_way_delay_ms": {"c2s": group.rtt_ms / 2, "s2c": group.rtt_ms / 2},
        "cert_delay_ms": group.cert_delay_ms,
        # The emulated server stack delay (0 = the server's own) and the client's key share (null = its default).
        "server_hello_hold_ms": hold_ms,
        "server_stack": stack_record(group.scenario, group.client, hold_ms, group.server_stack_delay),
        "client_key_share": group.client_key_share,
        # The papers' implementation conditions (data/reference/implementation_conditions.csv) or null (as built).
        "implementation_conditions": group.implementation_conditions,
        "implementation_conditions_set": conditions_record(
            group.implementation_conditions, group.scenario, group.client, group.server
        ),
        "cert_size": None if tcp else group.cert_size,  # no certificate on a plain TCP connection
        "cert_bytes": server_info.get("cert_bytes"),
        "file_name": group.file_name,
        "file_bytes": FILE_SIZES[group.file_name],
        "file_sha256": served.sha256,
        "app_protocol": group.app_protocol,
        "transport": "tcp" if tcp else "quic",
        "ack_ratio": policy.ack_ratio if policy else None,
        "ack_delay_ms": quic_policy.ack_delay_ms if quic_policy else None,
        "ack_delay_rtt_fraction": quic_policy.ack_delay_rtt_fraction if quic_policy else None,
        "ack_reordering": quic_policy.reordering if quic_policy else None,
        "receiver_ack_policy": None if policy is None else {"control": ack_policy_control(group.client, group.server)}
        | (tcp_ack_policy_record(policy.ack_ratio) if tcp
           else asdict(policy) | {"advertised_max_ack_delay_ms": policy.advertised_max_ack_delay_ms}),
        "ack_policy_control": ack_policy_control(group.client, group.server) if policy else None,
        # The server as a sender: what it reports (aioquic), else null (the implementation's own, not recorded).
        "congestion_control": server_info.get("congestion_control"),
        "pacing": server_info.get("pacing"),
        "path_profile": group.path_profile,
        "bandwidth_mbit": {"c2s": group.bandwidth_c2s_mbit, "s2c": group.bandwidth_s2c_mbit},
        "loss": {"c2s": group.loss_c2s, "s2c": group.loss_s2c},
        "queue_s2c_bytes": group.queue_s2c_bytes,
        "queue_c2s_packets": group.queue_c2s_packets,
        "drop_to_client": list(group.drop_to_client),
        # A content rule drops whichever datagrams carry the flight: what it dropped is the run's drop list.
        "drop_to_server": (impairment.get("c2s") or {}).get("dropped_indices", [])
        if group.drop_to_server_finished_flight
        else list(group.drop_to_server),
        "drop_to_server_rule": f"finished_flight:{group.drop_to_server_finished_flight}"
        if group.drop_to_server_finished_flight else None,
        "drop_calibration": group.extra.get("calibration"),
        "server_initial_rtt_ms": server_info.get("server_initial_rtt_ms"),
        "server_initial_pto_ms": server_info.get("server_initial_pto_ms"),
        "status": status,
        "failure_reason": reason,
        "client_exit_code": client_exit,
        "downloaded": downloaded,
        "impairment": impairment,
        "timings": {
            "start_unix_s": t.get("start"),
            "server_ready_unix_s": t.get("server_ready"),
            "client_start_unix_s": t.get("client_start"),
            "client_end_unix_s": t.get("client_end"),
            "client_duration_s": (t["client_end"] - t["client_start"]) if "client_end" in t and "client_start" in t
            else None,
            "total_s": (t["stopped"] - t["start"]) if "stopped" in t else None,
        },
        "versions": {"clients": versions, "server": server_info.get("server_version"),
                     "python": platform.python_version()},
        "testbed": {
            "kernel": platform.release(),
            "quicack_git_commit": _git_commit(),
            "job": topo.job,
            "addresses": {"client": str(topo.client_addr), "server": str(topo.server_addr)},
            "capture_snaplen": group.capture_snaplen,
            "forward_snaplen": group.forward_snaplen,
            "qlog_events_kept": {"client": group.client_qlog_events, "server": group.server_qlog_events},
            "captures": group.captures,
            "server_side_capture": group.captures and group.server_side_capture,
            "compressed": group.compress,
            "seed": group.seed * 1000 + repetition,
            "client_confined_to_its_flow": confined_to_its_flow(group.client),
            "cleanup_problems": cleanup_problems,
            "impairment_spin_ms": group.impairment_spin_ms if group.impairment_spin_ms is not None
            else router.PathImpairment.spin_ms,
            # 1-minute load average of the machine at the start and end, CPU seconds per process (_cpu_seconds).
            "host": host or {},
            "scheduling": _scheduling(),
        },
    }  # fmt: skip


def _scheduling() -> dict[str, Any]:
    """How the recorder (and so the client, the server and tcpdump it starts) was scheduled: on a host shared with
    other work, ``chrt -f`` keeps their wake-ups from waiting behind it (the impairment program is SCHED_FIFO 50)."""
    policy = os.sched_getscheduler(0)
    names = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}
    return {
        "policy": names.get(policy, str(policy)),
        "priority": os.sched_getparam(0).sched_priority,
        "nice": os.nice(0),
    }
