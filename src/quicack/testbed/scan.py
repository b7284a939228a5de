"""Record an emulated Internet scan in the imc24 authors' layout: ``<out>/<vantage_point>/data/<timestamp>/``.

For every measurement (in emulated-time order) and vantage point (one after another), as the authors'
``measurement.sh`` does on a real VP: the users of that VP first load the busy domains (warming the PoP's
certificate cache), then ``dumpcap -f "udp and port 443"`` runs on the VP's interface while the package's scanner
(``src/implementations/scanner``, QScanner's flags and output files) scans the targets; afterwards the capture and a
copy of ``targets`` are moved into the scanner's output folder and every file but ``logs`` is zstd-compressed.
``truth.csv.zst`` beside them says, per target, what the frontend was configured to do and what it decided (cache hit
or miss), i.e. the class the capture should show. Emulated time: ``quicack.testbed.scan_plan``.

usage: python -m quicack.testbed.scan --config config/testbed_scan.yaml [--out DIR] [--only-first N]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from ipaddress import IPv4Network
from pathlib import Path

import zstandard

from quicack.testbed import scan_net
from quicack.testbed.clients import implementations_dir
from quicack.testbed.netns import destroy, new_job_id, ns_argv, require_root
from quicack.testbed.procs import Managed, ProcessSet, sigterm_unwinds, wait_until
from quicack.testbed.scan_plan import (
    CDN_FRONTEND,
    Measurement,
    ScanPlan,
    Site,
    VantagePoint,
    check,
    load_config,
    plan,
    validate_section,
)
from quicack.testbed.scan_truth import TRUTH_COLUMNS, truth_rows
from quicack.testbed.server_programs import ServerRequest, is_ready, server_command

STORE_PORT = 8443
CAPTURE_FILTER = "udp and port 443"
COMPRESSED = ("capture.pcap", "key.log", "targets", "quic_connection_info.csv", "quic_shared_config.csv",
              "tls_shared_config.csv", "tls_certificates.csv", "http_header.csv")  # fmt: skip
_LOAD_SCID_PREFIX = "ff"  # load connections' SCIDs: never equal to a target's {i:016x}


def scanner_executable() -> Path:
    """The scanner binary: in $QUICACK_IMPLEMENTATIONS_DIR (or this checkout's src/implementations)."""
    for base in (implementations_dir(), Path(__file__).resolve().parents[2] / "implementations"):
        binary = base / "scanner" / "bin" / "scanner"
        if binary.is_file():
            return binary
    raise FileNotFoundError("scanner not built: src/implementations/build.sh scanner")


def write_targets(path: Path, rows: list[tuple[str, str, str]], scid_prefix: str = "") -> None:
    """QScanner's input: ip,sni,port,scid with a header; scid = the row index as 16 hex digits."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["ip", "sni", "port", "scid"])
        for i, (ip, sni, port) in enumerate(rows):
            scid = f"{i:016x}" if not scid_prefix else scid_prefix + f"{i:016x}"[len(scid_prefix):]
            w.writerow([ip, sni, port, scid])


def zstd_in_place(path: Path) -> Path:
    out = path.with_name(path.name + ".zst")
    with path.open("rb") as src, out.open("wb") as dst:
        zstandard.ZstdCompressor(level=19).copy_stream(src, dst)
    path.unlink()
    return out


@dataclass
class Testbed:
    """The running emulation: topology, processes, the frontends' decision logs."""

    plan: ScanPlan
    topo: scan_net.ScanTopology
    procs: ProcessSet
    work: Path
    decision_logs: dict[str, Path]  # site -> JSON lines
    store_delay_file: Path

    def read_decisions(self, offsets: dict[str, int]) -> list[dict[str, object]]:
        """Decision records written since `offsets` (which are advanced)."""
        records: list[dict[str, object]] = []
        for site, path in self.decision_logs.items():
            if not path.exists():
                continue
            with path.open("rb") as f:
                f.seek(offsets.get(site, 0))
                data = f.read()
            complete = data[: data.rfind(b"\n") + 1]
            offsets[site] = offsets.get(site, 0) + len(complete)
            records += [json.loads(line) for line in complete.splitlines() if line.strip()]
        return records


def _topology(p: ScanPlan, job: str) -> scan_net.ScanTopology:
    placements = [scan_net.SitePlacement(s.name, s.addresses) for s in p.sites]
    routes: dict[str, dict[IPv4Network, str]] = {}
    for vp, sites in p.routes.items():
        routes[vp] = {p.site(name).prefix: name for name in sites}
    store_rtt = {s.name: s.store_rtt_ms for s in p.sites if s.kind == CDN_FRONTEND}
    return scan_net.ScanTopology(job, [v.name for v in p.vantage_points], placements, routes, p.routes, store_rtt)


def start(p: ScanPlan, job: str, work: Path) -> Testbed:
    topo = _topology(p, job)
    procs = ProcessSet(work / "logs")
    tb = Testbed(p, topo, procs, work, {}, work / "store_delay_ms")
    scan_net.create(topo)
    impair = procs.start("impair", scan_net.impairment_argv(topo, sys.executable, str(work / "impair_summary.json")))
    wait_until(lambda: b'"ready": true' in impair.stdout_path.read_bytes(), 20.0, impair, "the impairment")
    names = sorted({d.sni for m in p.measurements for d in m.domains})
    (work / "domains.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    unavailable = sorted({d.sni for m in p.measurements for d in m.domains if d.unavailable})
    (work / "unavailable.txt").write_text("\n".join(unavailable) + "\n", encoding="utf-8")
    tb.store_delay_file.write_text(str(p.store["delay_ms_night"]), encoding="utf-8")
    store = procs.start("cert_store", ns_argv(topo.store.ns, [
        sys.executable, "-m", "quicack.testbed.cert_store", "--host", str(topo.store.addr), "--port", str(STORE_PORT),
        "--delay-file", str(tb.store_delay_file), "--preload", str(work / "domains.txt"),
        "--unavailable", str(work / "unavailable.txt"),
    ]))  # fmt: skip
    wait_until(lambda: b'"ready": true' in store.stdout_path.read_bytes(), 120.0, store, "the certificate store")
    for site in p.sites:
        _start_site(tb, site)
    return tb


def _start_site(tb: Testbed, site: Site) -> Managed:
    ns = tb.topo.site(site.name).ns
    hosts = [str(a) for a in site.addresses]
    if site.kind == CDN_FRONTEND:
        log = tb.work / "decisions" / f"{site.name}.jsonl"
        tb.decision_logs[site.name] = log
        argv = [sys.executable, "-m", "quicack.testbed.cdn_frontend", "--host", ",".join(hosts), "--port", "443",
                "--name", site.name, "--iata", site.iata, "--cache-ttl-s", f"{site.cache_ttl_s:g}",
                "--store", f"{tb.topo.store.addr}:{STORE_PORT}", "--decisions", str(log)]  # fmt: skip
        if site.padded:
            argv.append("--padded")
        m = tb.procs.start(f"site_{site.name}", ns_argv(ns, argv))
        wait_until(lambda: b'"ready": true' in m.stdout_path.read_bytes(), 60.0, m, f"frontend {site.name}")
        return m
    www = tb.work / "www" / site.name
    www.mkdir(parents=True, exist_ok=True)
    (www / "index.html").write_text(f"<html><body>{site.cdn} (emulated, {site.kind})</body></html>\n", encoding="utf-8")
    req = ServerRequest(impl=site.kind, host=hosts[0], port=443, cert_size="small", www=www,
                        qlog_dir=tb.work / "qlog" / site.name, keylog_path=tb.work / "keylog" / f"{site.name}.log",
                        ready_file=tb.work / f"{site.name}.ready")  # fmt: skip
    argv, env = server_command(req)
    m = tb.procs.start(f"site_{site.name}", ns_argv(ns, argv), env)
    wait_until(lambda: is_ready(req, ns_argv(ns, [])), 30.0, m, f"server {site.name}")
    return m


def _scanner_argv(tb: Testbed, targets: Path, output: Path) -> list[str]:
    s = tb.plan.scanner
    return [str(scanner_executable()), "-input", str(targets), "-output", str(output), "-keylog", "-http3",
            "-bucket-size", str(s["bucket_size"]), "-bucket-refill-duration", str(s["bucket_refill_ms"]),
            "-timeout", f"{float(s['timeout_s'])}s"]  # fmt: skip


def _run_scanner(tb: Testbed, ns: str, name: str, targets: Path, output: Path) -> float:
    """Run the scanner to completion in namespace `ns`; returns the wall-clock seconds it took."""
    t0 = time.monotonic()
    m = tb.procs.start(name, ns_argv(ns, _scanner_argv(tb, targets, output)), {"QUIC_GO_DISABLE_GSO": "true"})
    # The bucket's rate bounds the scan's length: twice that (for timeouts and the tail) and at least 10 minutes.
    s = tb.plan.scanner
    targets_count = max(sum(1 for _ in targets.open(encoding="utf-8")) - 1, 0)
    expected_s = targets_count * float(s["bucket_refill_ms"]) / 1000.0
    code = m.popen.wait(timeout=max(600.0, 2 * expected_s + 60.0))
    if code != 0:
        raise RuntimeError(f"{name} failed ({code}): {m.stderr_path.read_text(encoding='utf-8')[-2000:]}")
    tb.procs.procs.remove(m)
    return time.monotonic() - t0


def _capture(tb: Testbed, vp: str, path: Path) -> Managed:
    leaf = tb.topo.vp(vp)
    m = tb.procs.start(f"dumpcap_{vp}", ns_argv(leaf.ns, ["dumpcap", "-q", "-i", leaf.inside_if, "-f", CAPTURE_FILTER,
                                                          "-w", str(path)]))  # fmt: skip
    wait_until(lambda: path.exists() and path.stat().st_size > 0, 15.0, m, f"dumpcap on {vp}")
    time.sleep(0.3)  # the file header is written before the capture filter is attached
    return m


def measure(tb: Testbed, m: Measurement, vp: VantagePoint, rng: random.Random, offsets: dict[str, int],
            capture_grace_s: float = 0.5) -> Path:  # fmt: skip
    """One measurement at one vantage point: load, capture + scan, move and compress, truth."""
    p = tb.plan
    folder = p.out / vp.name / "data" / m.folder_name
    if folder.exists():
        raise FileExistsError(f"{folder} exists; remove it to record again")
    step = tb.work / "step"
    shutil.rmtree(step, ignore_errors=True)
    step.mkdir(parents=True)
    store_delay = p.store_delay_ms(m.emulated_time)
    tb.store_delay_file.write_text(f"{store_delay:.3f}", encoding="utf-8")

    warmed = p.warmed(m, vp, rng)
    if warmed:
        write_targets(step / "load.csv", [(str(d.address), d.sni, "443") for d in warmed], _LOAD_SCID_PREFIX)
        _run_scanner(tb, tb.topo.users(vp.name).ns, f"load_{vp.name}", step / "load.csv", step / "load_out")
    tb.read_decisions(offsets)  # the load's decisions are not part of the measurement

    targets = step / "targets"
    write_targets(targets, [(str(d.address), d.sni, "443") for d in m.domains])
    capture = step / "capture.pcap"
    dumpcap = _capture(tb, vp.name, capture)
    wall_start = time.time()
    folder.parent.mkdir(parents=True, exist_ok=True)
    scan_s = _run_scanner(tb, tb.topo.vp(vp.name).ns, f"scanner_{vp.name}", targets, folder)
    time.sleep(capture_grace_s)  # the authors wait 20 s; the last datagrams of a closed connection come within an RTT
    dumpcap.stop(signal.SIGINT, grace_s=5.0)
    tb.procs.procs.remove(dumpcap)
    shutil.move(capture, folder / "capture.pcap")
    shutil.copy(targets, folder / "targets")
    for name in COMPRESSED:
        if (folder / name).exists():
            zstd_in_place(folder / name)
    decisions = tb.read_decisions(offsets)
    rows = truth_rows(p, m, vp, decisions, {d.sni for d in warmed}, store_delay, wall_start)
    with (folder / "truth.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, TRUTH_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    zstd_in_place(folder / "truth.csv")  # like every file of the folder but logs
    (tb.work / "rates.jsonl").open("a", encoding="utf-8").write(json.dumps({
        "vp": vp.name, "folder": m.folder_name, "connections": len(m.domains), "scan_s": round(scan_s, 3),
    }) + "\n")  # fmt: skip
    return folder


def write_prefix_asn(p: ScanPlan, path: Path) -> None:
    """The emulated address plan as a plain ``prefix,asn`` file (what the scan ingest maps origin AS and CDN from)."""
    rows = sorted({(str(s.prefix), s.asn) for s in p.sites})
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["prefix", "asn"])
        w.writerows(rows)


def record(p: ScanPlan, only_first: int | None = None, keep_work: Path | None = None) -> list[Path]:
    """Record every measurement of `p` (or the first `only_first`) at every vantage point."""
    require_root()
    check(p)
    job = new_job_id()[:6]
    work = Path(tempfile.mkdtemp(prefix=f"quicack-scan-{job}-")) if keep_work is None else keep_work
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(p.seed)
    folders: list[Path] = []
    p.out.mkdir(parents=True, exist_ok=True)
    write_prefix_asn(p, p.out.parent / "prefix_asn.csv")
    tb: Testbed | None = None
    topo = _topology(p, job)
    with sigterm_unwinds():  # a stopped scan (or the test run around it) deletes its namespaces too
        try:
            tb = start(p, job, work)
            offsets: dict[str, int] = {}
            ttl = max((s.cache_ttl_s for s in p.sites if s.kind == CDN_FRONTEND), default=0.0)
            for m in p.measurements[:only_first]:
                for vp in p.vantage_points:
                    folders.append(measure(tb, m, vp, rng, offsets))
                    print(f"recorded {folders[-1]}", flush=True)
                    time.sleep(ttl + 0.2)  # every cache entry of this step expires before the next one
        finally:
            if tb is not None:
                tb.procs.stop_all()
            problems = destroy(topo)
            if problems:
                print("cleanup problems: " + "; ".join(problems), file=sys.stderr)
    return folders


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", type=Path, help="a config file with a scan_testbed section")
    source.add_argument("--section-json", help="the scan_testbed section itself, as JSON (the Snakemake rule)")
    ap.add_argument("--out", type=Path, help="override scan_testbed.out")
    ap.add_argument("--only-first", type=int, help="record only the first N measurements (emulated-time order)")
    ap.add_argument("--work", type=Path, help="keep logs, decision logs and rates here (default: a temp dir)")
    a = ap.parse_args(argv)
    cfg = load_config(a.config) if a.config is not None else validate_section(json.loads(a.section_json))
    if a.out is not None:
        cfg["out"] = str(a.out)
    folders = record(plan(cfg), a.only_first, a.work)
    print(f"{len(folders)} measurement folders under {cfg['out']}")


if __name__ == "__main__":
    main()
