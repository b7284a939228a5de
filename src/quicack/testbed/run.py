"""Run testbed measurements: one run = one connection through client/router/server namespaces.

    python -m quicack.testbed.run --config config/testbed.yaml --out data/sample/raw           # whole matrix
    python -m quicack.testbed.run --config config/testbed.yaml --out ... --group KEY          # one run group
    python -m quicack.testbed.run --config config/testbed.yaml --list                         # group keys

Every exit path (success, failure, exception, Ctrl-C, SIGTERM) stops the processes of the run and deletes
its namespaces, which takes their veths, qdiscs and iptables rules with them. A run that fails is written as
data (``status: failed`` with a ``failure_reason``), never counted as a success.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from quicack.layout import RunLocation
from quicack.layout.runs import keylog_path, qlog_folder, sim_folder
from quicack.layout.vantage import CLIENT, ENDPOINTS, SERVER
from quicack.testbed import capture, netns, reduce, router, tidy
from quicack.testbed.calibrate import calibrate
from quicack.testbed.certs import cert_paths
from quicack.testbed.clients import (
    TCP,
    ClientRequest,
    client_command,
    confined_to_its_flow,
    exit_grace_s,
    url_scheme,
)
from quicack.testbed.conditions import group_condition_options
from quicack.testbed.files import ensure_files, sha256_file
from quicack.testbed.procs import ProcessSet, raise_on_sigterm, wait_until
from quicack.testbed.receiver_ack_control import (
    SENDER_ACK_FREQUENCY,
    ack_policy_control,
    tcp_ack_thinning,
)
from quicack.testbed.run_record import Timing, run_record
from quicack.testbed.scenarios import RunGroup, expand, group_from_json, in_part, with_drops
from quicack.testbed.server_programs import ServerRequest, is_ready, server_command
from quicack.testbed.server_programs import server_info as server_info_of

SERVER_PORT = 443
GROUP_JSON = "group.json"
# failure_reason of a run stopped by SIGTERM/SIGINT: not data, recorded again when the group resumes
INTERRUPTED = "interrupted by the testbed's operator"
# ... and as runs recorded before that marker said it
_INTERRUPTED_BEFORE = ("testbed error: SystemExit", "testbed error: KeyboardInterrupt")


@dataclass
class RunResult:
    status: str  # ok | failed
    failure_reason: str | None
    run_json: dict[str, Any]
    run_dir: Path





def _www_dir() -> Path:
    # Shared, content-addressed by the fixed seed: every run of every job serves identical files.
    return Path(os.environ.get("QUICACK_WWW", Path(tempfile.gettempdir()) / "quicack-www"))


def _tail(path: Path, n: int = 600) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-n:].strip()
    except OSError:
        return ""


def execute_run(group: RunGroup, repetition: int, raw_root: Path, run_dir: Path | None = None) -> RunResult:
    """One connection of `group`; writes the raw layout and run.json under `raw_root` (or `run_dir`)."""
    netns.require_root()
    loc = RunLocation(group.server, group.client, group.testcase, repetition)
    if run_dir is None:
        run_dir = raw_root / loc.relative()
    if run_dir.exists():
        shutil.rmtree(run_dir)
    tcp = group.app_protocol == TCP
    policy = group.receiver_ack_policy
    if not tcp:  # the kernel's TCP writes no qlog: no empty folders that would read as missing qlogs
        for endpoint in ENDPOINTS:
            qlog_folder(run_dir, endpoint).mkdir(parents=True)
    sim_dir = sim_folder(run_dir)
    sim_dir.mkdir(parents=True)
    logs = run_dir / tidy.LOGS

    served = ensure_files(_www_dir(), [group.file_name])[group.file_name]
    one_way = group.rtt_ms / 2
    imp = router.PathImpairment(
        delay_c2s_ms=one_way,
        delay_s2c_ms=one_way,
        bandwidth_c2s_mbit=group.bandwidth_c2s_mbit,
        bandwidth_s2c_mbit=group.bandwidth_s2c_mbit,
        loss_c2s=group.loss_c2s,
        loss_s2c=group.loss_s2c,
        queue_s2c_bytes=group.queue_s2c_bytes,
        queue_c2s_packets=group.queue_c2s_packets,
        drop_c2s=group.drop_to_server,
        drop_s2c=group.drop_to_client,
        drop_c2s_finished_flight=group.drop_to_server_finished_flight,
        thin_c2s_tcp_acks=tcp_ack_thinning(policy.ack_ratio) if tcp and policy else 0,
        seed=group.seed * 1000 + repetition,
        spin_ms=router.PathImpairment.spin_ms if group.impairment_spin_ms is None else group.impairment_spin_ms,
    )
    topo = netns.Topology(netns.new_job_id())
    procs = ProcessSet(logs)
    timing = Timing()
    timing.mark("start")
    reason: str | None  # None: ok
    status, reason = "failed", "testbed did not complete"
    server_info: dict[str, Any] = {}
    client_exit: int | None = None
    downloaded: dict[str, Any] = {}
    impairment: dict[str, Any] = {}
    host: dict[str, Any] = {"loadavg_start": list(os.getloadavg())}
    cleanup_problems: list[str] = []
    download_tmp = Path(tempfile.mkdtemp(prefix="quicack-dl-"))
    try:
        netns.create(topo)
        if tcp and policy and policy.ack_ratio == 1:
            netns.quickack_route(topo)
        if confined_to_its_flow(group.client):
            netns.confine_client(topo, SERVER_PORT)
        router.configure(topo, imp)
        impair_proc = router.start_impairment(topo, imp, procs, logs / "impairment.json")
        caps = capture.start_captures(topo, sim_dir, procs, snaplen=group.capture_snaplen) if group.captures else None
        sreq = ServerRequest(
            impl=group.server, host=str(topo.server_addr), port=SERVER_PORT, cert_size=group.cert_size,
            www=_www_dir(), qlog_dir=qlog_folder(run_dir, SERVER), keylog_path=keylog_path(run_dir, SERVER),
            ready_file=run_dir / tidy.SERVER_INFO, mode=group.mode, cert_delay_ms=group.cert_delay_ms,
            server_hello_hold_ms=group.server_hello_hold_ms,
            initial_rtt_ms=group.server_initial_rtt_ms, congestion_control=group.server_congestion_control,
            pacing=group.server_pacing, ack_policy=group.receiver_ack_policy if _sender_sets_policy(group) else None,
        )  # fmt: skip
        server_argv, server_env = server_command(sreq)
        server_argv += group_condition_options(group, "server")
        server = procs.start("server", netns.ns_argv(topo.server_ns, server_argv), server_env)
        in_server_ns = netns.ns_argv(topo.server_ns, [])
        wait_until(lambda: is_ready(sreq, in_server_ns), 20.0, server, "server to listen")
        server_info = server_info_of(sreq)
        timing.mark("server_ready")

        req = ClientRequest(
            impl=group.client,
            url=f"{url_scheme(group.client)}://{topo.server_addr}:{SERVER_PORT}/{group.file_name}",
            app_protocol=group.app_protocol,
            download_dir=download_tmp,
            keylog_path=keylog_path(run_dir, CLIENT),
            qlog_dir=qlog_folder(run_dir, CLIENT),
            timeout_s=group.timeout_s,
            ack_policy=None if _sender_sets_policy(group) else group.receiver_ack_policy,
            server_chain=None if tcp else cert_paths(group.cert_size).chain,
            key_share=group.client_key_share,
        )
        argv, env = client_command(req)
        # Before the URL: a Go client's flag parsing stops at its first argument that is not a flag.
        url_at = argv.index(req.url)
        argv[url_at:url_at] = group_condition_options(group, "client")
        timing.mark("client_start")
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        client = procs.start("client", netns.ns_argv(topo.client_ns, argv), env)
        try:
            client_exit = client.popen.wait(timeout=group.timeout_s + exit_grace_s(group.client))
        except subprocess.TimeoutExpired:
            client.stop(signal.SIGKILL, grace_s=2)
            client_exit = None
        timing.mark("client_end")
        host["cpu_seconds"] = _cpu_seconds(children_before, server, impair_proc)
        # Let the last datagrams (CONNECTION_CLOSE, final ACKs) cross the emulated path before capturing stops.
        time.sleep(min(2.0, group.rtt_ms / 1000 * 2 + 0.2))
        server.stop(signal.SIGTERM, grace_s=5)
        if caps is not None:
            caps.stop()
        impair_proc.stop(signal.SIGTERM, grace_s=5)
        timing.mark("stopped")
        host["loadavg_end"] = list(os.getloadavg())
        if (logs / "impairment.json").exists():
            impairment = json.loads((logs / "impairment.json").read_text(encoding="utf-8"))

        got = download_tmp / group.file_name
        if got.exists():
            downloaded = {"bytes": got.stat().st_size, "sha256": sha256_file(got)}
        if client_exit is None:
            reason = f"timeout: client did not finish within {group.timeout_s + exit_grace_s(group.client):g} s"
        elif not got.exists():
            reason = f"no download (client exit {client_exit}): {_tail(logs / 'client.stderr', 300)}"
        elif downloaded["sha256"] != served.sha256:
            reason = f"checksum mismatch: got {downloaded['bytes']} B, expected {served.size_bytes} B"
        elif client_exit != 0:
            reason = f"client exit code {client_exit} although the file arrived intact"
        else:
            status, reason = "ok", None
    except (Exception, KeyboardInterrupt, SystemExit) as exc:
        reason = f"testbed error: {type(exc).__name__}: {exc}"
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            reason = f"{INTERRUPTED}: {type(exc).__name__}: {exc}"
            rj = run_record(group, repetition, loc, served, server_info, status, reason, client_exit, downloaded,
                           impairment, timing, topo, [], host)  # fmt: skip
            tidy.write_run_json(run_dir, tidy.fold_into_run_json(run_dir, rj))
            raise
    finally:
        procs.stop_all()
        cleanup_problems = netns.destroy(topo)
        shutil.rmtree(download_tmp, ignore_errors=True)
    _reduce(group, run_dir, str(topo.client_addr))
    if group.compress:
        _compress_outputs(run_dir)
    if not group.server_qlog:
        shutil.rmtree(qlog_folder(run_dir, SERVER), ignore_errors=True)
    if not group.server_side_capture:
        for server_side in sim_folder(run_dir).glob(capture.RIGHT + "*"):
            server_side.unlink()
    tidy.drop_redundant_server_keylog(run_dir)
    rj = run_record(
        group, repetition, loc, served, server_info, status, reason, client_exit, downloaded, impairment, timing,
        topo, cleanup_problems, host,
    )  # fmt: skip
    rj = tidy.fold_into_run_json(run_dir, rj)
    tidy.write_run_json(run_dir, rj)
    return RunResult(status, reason, rj, run_dir)


def _cpu_seconds(children_before: resource.struct_rusage, server: Any, impairment: Any) -> dict[str, float | None]:
    """CPU seconds of the run's processes up to the client's end: the client (the children reaped since it started:
    only the client ends in between), the server and the impairment program (still running, from /proc). A run on a
    busy machine shows here whether a process needed more CPU than it could get."""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = (after.ru_utime + after.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
    return {"client": round(client, 3), "server": server.cpu_seconds(), "impairment": impairment.cpu_seconds()}


def _reduce(group: RunGroup, run_dir: Path, client_address: str) -> None:
    """The group's cuts (quicack.testbed.reduce), before compression."""
    if group.forward_snaplen:
        for client_side in sim_folder(run_dir).glob(capture.LEFT + "*"):
            reduce.cut_frames_not_from(client_side, client_address, group.forward_snaplen)
    for endpoint, names in ((CLIENT, group.client_qlog_events), (SERVER, group.server_qlog_events)):
        if names is not None:
            for qlog in qlog_folder(run_dir, endpoint).glob("*qlog*"):
                reduce.keep_qlog_events(qlog, names)


def _sender_sets_policy(group: RunGroup) -> bool:
    """Whether the receiver's ACK policy is requested by the server (ACK_FREQUENCY) rather than set in the client."""
    return (group.receiver_ack_policy is not None
            and ack_policy_control(group.client, group.server) == SENDER_ACK_FREQUENCY)  # fmt: skip


def _compress_outputs(run_dir: Path) -> None:
    for p in list(sim_folder(run_dir).glob("*.pcap")):
        capture.gzip_file(p)
    for endpoint in ENDPOINTS:
        for p in list(qlog_folder(run_dir, endpoint).glob("*")):
            if p.is_file() and not p.name.endswith((".gz", ".zst")):
                capture.gzip_file(p)


def _baseline(group: RunGroup, **changes: Any) -> RunGroup:
    # The calibration reads both captures, whatever the group keeps.
    return replace(group, **{"scenario": "noloss", "repetitions": 1, "compress": False, "calibrate": None,
                             "captures": True, "server_side_capture": True,
                             "drop_to_client": (), "drop_to_server": (), "drop_to_server_finished_flight": 0,
                             "extra": {}, **changes})  # fmt: skip


def _calibrate_baseline(baseline: RunGroup, work: Path, name: str) -> dict[str, Any]:
    res = execute_run(baseline, 0, work, run_dir=work / name)
    sim = sim_folder(res.run_dir)
    cal = calibrate(sim / capture.LEFT, sim / capture.RIGHT)
    return cal.as_dict() | {"baseline_status": res.status, "baseline_failure_reason": res.failure_reason}


# imc24 Table 4 / Appendix E: the second client flight is mapped to datagram indices once per client and used
# for both modes and every RTT ("this static mapping no longer drops the entire second client flight" when a
# client sends probes first, e.g. at 300 ms). Found from several no-loss WFC baselines at this RTT, because a
# client's burst may include one more ACK-only datagram by timing alone (see choose_static_flight).
CLIENT_FLIGHT_REFERENCE = {
    "mode": "wfc",
    "rtt_ms": 9.0,
    "cert_delay_ms": 0.0,
    "cert_size": "small",
    "server_hello_hold_ms": 0.0,
}
CLIENT_FLIGHT_BASELINES = 3
CLIENT_FLIGHT_FILE = "client_flight_calibration.json"


def choose_static_flight(flights: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The shortest flight the baselines showed (the most frequent among equally short ones): a
    longer one holds an ACK-only datagram the client happened to send between the flight's
    datagrams (aioquic: 2,3,4 or, by timing, 2,3,4,5 with an ACK as datagram 4), not more of the
    flight's information."""
    shortest = min(len(flight) for flight in flights)
    candidates = [flight for flight in flights if len(flight) == shortest]
    return min(set(candidates), key=lambda flight: (-candidates.count(flight), flight))


def static_client_flight(group: RunGroup, raw_root: Path, work: Path) -> dict[str, Any]:
    """The client's static second-flight mapping, calibrated on first use and kept beside its run
    groups (``<raw>/<server>_<client>/client_flight_calibration.json``) so every group of that client
    drops the same datagrams."""
    path = raw_root / f"{group.server}_{group.client}" / CLIENT_FLIGHT_FILE
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    baselines = [
        _calibrate_baseline(_baseline(group, **CLIENT_FLIGHT_REFERENCE), work, f"client_flight_{i}")
        for i in range(1, CLIENT_FLIGHT_BASELINES + 1)
    ]
    flights = [
        tuple(b["second_client_flight"])
        for b in baselines
        if b["baseline_status"] == "ok" and b["second_client_flight"]
    ]
    if not flights:
        raise RuntimeError(f"{group.client}: no no-loss baseline showed a second client flight")
    chosen = choose_static_flight(flights)
    result = {"second_client_flight": list(chosen), "reference": CLIENT_FLIGHT_REFERENCE, "baselines": baselines}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    return result


def _with_calibration(group: RunGroup, info: dict[str, Any]) -> RunGroup:
    """`group` with the drop lists that the calibration `info` (a baseline's flights, or the static mapping) gives
    its scenario."""
    to_client = tuple(info["drop_to_client"]) if group.calibrate == "server_flight" else ()
    to_server = tuple(info["drop_to_server"]) if group.calibrate == "client_flight" else ()
    finished_flight = len(info["client_finished_flight"]) if group.calibrate == "client_finished_flight" else 0
    out = with_drops(group, to_client, to_server, finished_flight)
    out.extra["calibration"] = info
    return out


def calibrate_group(group: RunGroup, work: Path, raw_root: Path) -> RunGroup:
    """The drop list of `group`: the remaining first server flight from a no-loss baseline of the same
    client, mode and RTT (it differs by mode: IACK adds the instant ACK); the second client flight from
    the client's static mapping, or (``client_finished_flight``: certificates above the amplification
    limit) the client's Finished flight from a no-loss baseline of the same client, mode and RTT."""
    if group.calibrate == "client_flight":
        static = static_client_flight(group, raw_root, work)
        flight = static["second_client_flight"]
        return _with_calibration(group, {
            "drop_to_client": [], "drop_to_server": flight, "first_server_flight": None, "second_client_flight": flight,
            "static": True,
            "reference": static["reference"], "note": f"static per client ({CLIENT_FLIGHT_FILE})",
            "baseline_status": "ok", "baseline_failure_reason": None,
        })  # fmt: skip
    return _with_calibration(group, _calibrate_baseline(_baseline(group), work, "baseline"))


def kept_runs(group: RunGroup, raw_root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The recorded group.json of `group` and its kept repetitions 1..kept_repetitions (repetition, status,
    failure_reason from each run's run.json); an error when one of them is missing: there is nothing to add to."""
    testcase_dir = raw_root / group.key
    recorded = json.loads((testcase_dir / GROUP_JSON).read_text(encoding="utf-8"))
    runs = []
    for rep in range(1, group.kept_repetitions + 1):
        run_json = testcase_dir / str(rep) / "run.json"
        if not run_json.exists():
            raise FileNotFoundError(f"{group.key}: kept repetition {rep} has no {run_json}")
        rj = json.loads(run_json.read_text(encoding="utf-8"))
        runs.append({"repetition": rj["repetition"], "status": rj["status"], "failure_reason": rj["failure_reason"]})
    return recorded, runs


def unfinished_reason(group: RunGroup, raw_root: Path) -> str | None:
    """Why ``group`` is not yet recorded whole under ``raw_root``, or None when it is: its group.json (written when
    the group ends) lists every repetition, each repetition's run.json exists, and none was interrupted (a run that
    failed on its own is recorded as data and counts)."""
    folder = raw_root / group.key
    if not (folder / GROUP_JSON).is_file():
        return f"not recorded (no {GROUP_JSON})"
    listed = len(json.loads((folder / GROUP_JSON).read_text(encoding="utf-8")).get("runs", []))
    present = 0
    for repetition in range(1, group.repetitions + 1):
        run_json = folder / str(repetition) / "run.json"
        if not run_json.is_file():
            continue
        reason = str(json.loads(run_json.read_text(encoding="utf-8")).get("failure_reason") or "")
        if reason.startswith((INTERRUPTED, *_INTERRUPTED_BEFORE)):
            return f"repetition {repetition} was interrupted"
        present += 1
    recorded = min(listed, present)
    return None if recorded >= group.repetitions else f"{recorded} of {group.repetitions} repetitions"


def run_group(group: RunGroup, raw_root: Path, log=print) -> list[RunResult]:
    """Every repetition of `group` (after drop-list calibration when the scenario needs it), or, with
    ``kept_repetitions``, the repetitions after the kept ones, with the kept runs' drop lists."""
    kept: list[dict[str, Any]] = []
    if group.kept_repetitions:
        if group.kept_base is not None and not (raw_root / group.key / GROUP_JSON).exists():
            # A recording from scratch: the kept repetitions first, with the earlier block's settings.
            run_group(group.kept_base, raw_root, log)
        recorded, kept = kept_runs(group, raw_root)
        if group.calibrate:
            group = _with_calibration(group, recorded["calibration"])
    elif group.calibrate:
        with tempfile.TemporaryDirectory(prefix="quicack-calib-") as tmp:
            group = calibrate_group(group, Path(tmp), raw_root)
    if group.calibrate:
        cal = group.extra["calibration"]
        log(f"[{group.key}] calibrated: drop_to_client={list(group.drop_to_client)} "
            f"drop_to_server={list(group.drop_to_server)} finished_flight={group.drop_to_server_finished_flight} "
            f"{cal.get('note') or ''}" + (" (as recorded for the kept repetitions)" if kept else ""))  # fmt: skip
    results = []
    for rep in range(group.kept_repetitions + 1, group.repetitions + 1):
        res = execute_run(group, rep, raw_root)
        log(f"[{group.key}] rep {rep}: {res.status}" + (f" ({res.failure_reason})" if res.failure_reason else ""))
        results.append(res)
    testcase_dir = raw_root / group.key
    summary = {
        "group": group.key,
        "calibration": group.extra.get("calibration"),
        "runs": kept + [{"repetition": r.run_json["repetition"], "status": r.status, "failure_reason": r.failure_reason}
                        for r in results],
    }  # fmt: skip
    (testcase_dir / GROUP_JSON).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return results


def load_config(path: Path) -> dict[str, Any]:
    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    return cfg.get("testbed", cfg)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="quicack emulation testbed runner (needs root)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", type=Path, help="YAML with a `testbed:` section")
    src.add_argument("--config-json", help="the `testbed:` section as inline JSON")
    src.add_argument("--group-json", help="one run group as JSON (scenarios.group_to_json; used by Snakemake)")
    ap.add_argument("--out", type=Path, help="raw folder (default: from config `out`)")
    ap.add_argument("--group", action="append", help="run only this group key (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the group keys and exit")
    ap.add_argument("--again", action="store_true", help="record groups already recorded whole again (default: skip)")
    ap.add_argument(
        "--part", help="run only the groups of the blocks with this `part` (a session-sized share of a long matrix)"
    )
    a = ap.parse_args(argv)
    if a.group_json:
        groups = [group_from_json(a.group_json)]
        cfg = {"dataset": groups[0].dataset}
    else:
        cfg = json.loads(a.config_json) if a.config_json else load_config(a.config)
        groups = [g for g in expand(cfg) if in_part(g, a.part)]
    if a.list:
        for g in groups:
            print(g.key)
        return 0
    try:
        netns.require_root()
    except PermissionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    out = a.out or Path(cfg.get("out", f"data/{cfg['dataset']}/raw"))
    if a.group:
        wanted = set(a.group)
        unknown = wanted - {g.key for g in groups}
        if unknown:
            print(f"error: unknown group(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        groups = [g for g in groups if g.key in wanted]
    failed = skipped = 0
    for g in groups:
        if not a.again and unfinished_reason(g, out) is None:
            skipped += 1  # resumable: a group recorded whole is not recorded again
            continue
        failed += sum(r.status != "ok" for r in run_group(g, out))
    print(f"done: {len(groups) - skipped} group(s) recorded, {skipped} already whole, "
          f"{failed} failed run(s) recorded as data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
