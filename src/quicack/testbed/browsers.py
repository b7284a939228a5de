"""Chromium and Firefox as HTTP/3 clients of the testbed: one browser process, one fresh profile, one download.

    python -m quicack.testbed.browsers --browser chromium|firefox --keylog F --qlog-dir D --download-dir D \\
        [--netlog F.json.gz] --timeout 30 https://<server address>:<port>/<file>

The same contract as the compiled clients (src/implementations/README.md): the body is saved as
``<download-dir>/<file>``, TLS secrets go to the keylog (both browsers read ``SSLKEYLOGFILE``), exit status 0 only when
the whole download arrived. The browser saves the URL as a download (the testbed's files are served as
``application/octet-stream``) into a private folder; the download counts as complete when the browser has given it
its final name (Chromium renames ``*.crdownload``, Firefox moves ``*.part`` onto a placeholder), and the testbed then
checks its SHA-256 like any other client's. The browser is then asked to quit (Chromium: SIGINT; Firefox: Marionette's
``Marionette:Quit``), so that its logs end cleanly: Firefox's neqo qlog (qlog 0.3 JSON-SEQ, ``TMPDIR/qlog_<pid>/``)
is copied into the qlog folder, Chromium's NetLog (no qlog; kept raw, not ingested) is gzipped to ``--netlog``.

Both reach the server by the certificates' name (``quicack.test``) mapped to the URL's address: Chromium by
``--host-resolver-rules`` (every other name resolves to nothing, so no background request leaves the machine),
Firefox by ``network.dns.forceResolve``. Certificates: Chromium ignores errors for the SPKI of every testbed leaf,
Firefox trusts the testbed's CA in a fresh NSS database (certutil). HTTP/3 is forced (Chromium
``--origin-to-force-quic-on``, Firefox's Alt-Svc mapping for testing). The browsers' own transport settings (ACK
policy, congestion control, key shares) stay their defaults. Profiles, HOME and TMPDIR live in one private folder,
removed at the end together with every process the browser left.
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import functools
import gzip
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from quicack.testbed.certs import SERVER_NAME, cert_paths

CHROMIUM = "chromium"
FIREFOX = "firefox"
BROWSERS: tuple[str, ...] = (CHROMIUM, FIREFOX)
# The real binaries: Debian's /usr/bin/chromium is a shell launcher that adds flags of its own and then execs this.
_EXECUTABLES = {
    CHROMIUM: ("/usr/lib/chromium/chromium", "chromium"),
    FIREFOX: ("/usr/lib/firefox-esr/firefox-esr", "firefox-esr"),
}
DEBIAN_PACKAGES = {CHROMIUM: "chromium", FIREFOX: "firefox-esr"}
# Names a download has while the browser still writes it.
_PARTIAL_SUFFIXES = (".crdownload", ".part")
_POLL_S = 0.02
# Asking the browser to quit and waiting for it (a Marionette session takes seconds to open on a busy machine), then
# SIGTERM and SIGKILL with 5 s each: what a caller adds to the download's timeout (quicack.testbed.clients).
_QUIT_GRACE_S = 15.0
QUIT_BUDGET_S = _QUIT_GRACE_S + 10.0
# NetLog detail: "Default" logs every QUIC packet and frame event without raw bytes ("Everything" adds the bytes and
# quadruples the file).
NETLOG_MODE = "Default"


def executable(browser: str) -> Path | None:
    """The browser's program, or None when it is not installed."""
    for candidate in _EXECUTABLES[_known(browser)]:
        found = shutil.which(candidate)
        if found:
            return Path(found)
    return None


@functools.cache
def version(browser: str) -> str | None:
    """'Chromium 156.0.8078.108 (Debian chromium 156.0.8078.108-1~deb12u1; QUIC: Google QUIC)' or None if not
    installed; asked once per process (every run's run.json lists every client's version)."""
    program = executable(browser)
    if program is None:
        return None
    env = os.environ | {"HOME": tempfile.gettempdir()}  # both may try to create a profile folder in HOME
    try:
        out = subprocess.run(
            [str(program), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
            check=True,
            encoding="utf-8",
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = out.stdout.strip().splitlines()[0] if out.stdout.strip() else browser
    name = line.split(" built on ")[0].removeprefix("Mozilla ")
    stack = "Google QUIC" if browser == CHROMIUM else "neqo"
    return f"{name} (Debian {DEBIAN_PACKAGES[browser]} {_debian_version(DEBIAN_PACKAGES[browser])}; QUIC: {stack})"


def _debian_version(package: str) -> str:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
            encoding="utf-8",
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def _known(browser: str) -> str:
    if browser not in BROWSERS:
        raise ValueError(f"unknown browser {browser!r}; known: {', '.join(BROWSERS)}")
    return browser


def spki_sha256(certificate: x509.Certificate) -> str:
    """base64 SHA-256 of a certificate's SubjectPublicKeyInfo: what Chromium's --ignore-certificate-errors-spki-list
    takes."""
    spki = certificate.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


def chain_certificates(chain: Path) -> list[x509.Certificate]:
    """The certificates of a PEM chain, leaf first, CA last (quicack.testbed.certs)."""
    return x509.load_pem_x509_certificates(chain.read_bytes())


@dataclass(frozen=True)
class Download:
    """One browser download: what it fetches and where its outputs go."""

    browser: str
    address: str  # the server's IP address (the URL's host)
    port: int
    path: str  # '/10MB'
    keylog: Path
    qlog_dir: Path
    download_dir: Path
    netlog: Path | None  # Chromium's NetLog, gzipped (None: none)
    timeout_s: float
    # The chain the server presents: Chromium accepts its leaf's key, Firefox trusts its CA (one CA per profile: the
    # testbed's CAs share a name and serial number, which one NSS database cannot hold twice).
    server_chain: Path = field(default_factory=lambda: cert_paths("small").chain)

    @property
    def file_name(self) -> str:
        return Path(self.path).name

    @property
    def browser_url(self) -> str:
        return f"https://{SERVER_NAME}:{self.port}{self.path}"


def chromium_command(program: Path, dl: Download, work: Path) -> list[str]:
    """Chromium's argv for ``dl`` with its profile in ``work``."""
    profile = work / "profile"
    (profile / "Default").mkdir(parents=True)
    # Saving without asking into our folder; Safe Browsing would hold the finished download for a check against
    # Google's servers, which are out of reach here. No network prediction (2: disabled): otherwise Chromium
    # preconnects to the URL at start, a QUIC connection of its own that it then marks going away, and opens a second
    # one for the download (49 of 60 imc24 runs): the drop lists by datagram index then hit the preconnection.
    prefs = {"download": {"default_directory": str(work / "downloads"), "prompt_for_download": False,
                          "directory_upgrade": True}, "safebrowsing": {"enabled": False},
             "net": {"network_prediction_options": 2}}  # fmt: skip
    (profile / "Default" / "Preferences").write_text(json.dumps(prefs), encoding="utf-8")
    argv = [
        str(program), "--headless=new", "--no-sandbox", "--enable-quic",
        f"--origin-to-force-quic-on={SERVER_NAME}:{dl.port}",
        # Every other name resolves to nothing: no background request (updates, sign-in, time) leaves the namespace.
        f"--host-resolver-rules=MAP {SERVER_NAME} {dl.address}, MAP * ~NOTFOUND",
        f"--ignore-certificate-errors-spki-list={spki_sha256(chain_certificates(dl.server_chain)[0])}",
        f"--user-data-dir={profile}", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--no-default-browser-check", "--disable-breakpad",
    ]  # fmt: skip
    if dl.netlog is not None:
        argv += [f"--log-net-log={work / 'netlog.json'}", f"--net-log-capture-mode={NETLOG_MODE}"]
    return [*argv, dl.browser_url]


def firefox_prefs(dl: Download, downloads: Path) -> dict[str, object]:
    """The user.js of a Firefox download: HTTP/3 forced for the server's name, qlog on, saving without asking,
    background services off."""
    return {
        "network.http.http3.enable": True,
        "network.http.http3.alt-svc-mapping-for-testing": f"{SERVER_NAME};h3=:{dl.port}",
        "network.http.http3.force-use-alt-svc-mapping-for-testing": True,
        # Firefox switches HTTP/3 off when a certificate chains to a root it does not ship (our test CA).
        "network.http.http3.disable_when_third_party_roots_found": False,
        "network.http.http3.enable_qlog": True,
        "network.dns.forceResolve": dl.address,
        "network.trr.mode": 5,
        "browser.download.dir": str(downloads),
        "browser.download.folderList": 2,
        "browser.download.useDownloadDir": True,
        "browser.download.always_ask_before_handling_new_types": False,
        "browser.helperApps.neverAsk.saveToDisk": "application/octet-stream",
        "browser.safebrowsing.downloads.enabled": False,
        "browser.safebrowsing.malware.enabled": False,
        "browser.safebrowsing.phishing.enabled": False,
        "browser.safebrowsing.blockedURIs.enabled": False,
        "app.update.enabled": False,
        "app.normandy.enabled": False,
        "datareporting.healthreport.uploadEnabled": False,
        "datareporting.policy.dataSubmissionEnabled": False,
        "toolkit.telemetry.enabled": False,
        "network.captive-portal-service.enabled": False,
        "network.connectivity-service.enabled": False,
        "extensions.update.enabled": False,
        "browser.search.update": False,
        "browser.startup.page": 0,
        "network.prefetch-next": False,
        "network.dns.disablePrefetch": True,
        "network.http.speculative-parallel-limit": 0,
        "browser.shell.checkDefaultBrowser": False,
        # Marionette on a free port (written to <profile>/MarionetteActivePort): how the download is ended cleanly.
        "marionette.port": 0,
    }


def firefox_command(program: Path, dl: Download, work: Path) -> list[str]:
    """Firefox's argv for ``dl``; creates its profile (NSS database trusting the testbed CA, user.js) in ``work``."""
    profile = work / "profile"
    profile.mkdir()
    subprocess.run(["certutil", "-N", "-d", f"sql:{profile}", "--empty-password"], check=True, capture_output=True)
    ca = work / "ca.pem"
    ca.write_bytes(chain_certificates(dl.server_chain)[-1].public_bytes(serialization.Encoding.PEM))
    subprocess.run(["certutil", "-A", "-n", "quicack test CA", "-t", "C,,", "-i", str(ca), "-d", f"sql:{profile}"],
                   check=True, capture_output=True)  # fmt: skip
    lines = [f"user_pref({json.dumps(k)}, {json.dumps(v)});" for k, v in firefox_prefs(dl, work / "downloads").items()]
    (profile / "user.js").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [str(program), "--headless", "--no-remote", "--marionette", "--profile", str(profile), dl.browser_url]


def browser_environment(dl: Download, work: Path) -> dict[str, str]:
    home = work / "home"
    env = {
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
        "TMPDIR": str(work / "tmp"), "SSLKEYLOGFILE": str(dl.keylog),
    }  # fmt: skip
    if dl.browser == FIREFOX:
        env |= {"MOZ_HEADLESS": "1", "MOZ_CRASHREPORTER_DISABLE": "1"}
    return env


def finished_download(folder: Path, name: str) -> Path | None:
    """``folder/name`` once the browser has finished it: the final name exists and no partial file is left."""
    target = folder / name
    if not target.is_file():
        return None
    if any(p.name.endswith(_PARTIAL_SUFFIXES) for p in folder.iterdir()):
        return None
    return target


# -- ending the browser -----------------------------------------------------------------------------------------------


def _marionette_quit(profile: Path, timeout_s: float = 10.0) -> bool:
    """Ask Firefox to quit through Marionette (length-prefixed JSON over TCP on loopback); True if it accepted."""
    port_file = profile / "MarionetteActivePort"
    deadline = time.monotonic() + timeout_s
    while not port_file.is_file() and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    try:
        port = int(port_file.read_text(encoding="utf-8").strip())
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as conn:
            reader = conn.makefile("rb")
            _marionette_read(reader)  # the server's hello
            for message_id, (command, params) in enumerate(
                (("WebDriver:NewSession", {}), ("Marionette:Quit", {"flags": ["eAttemptQuit"]})), start=1
            ):
                body = json.dumps([0, message_id, command, params]).encode()
                conn.sendall(str(len(body)).encode() + b":" + body)
                reply = _marionette_read(reader)
                if reply[2] is not None:  # [1, id, error, result]
                    return False
        return True
    except (OSError, ValueError, IndexError):
        return False


def _marionette_read(reader) -> list:
    length = b""
    while not length.endswith(b":"):
        byte = reader.read(1)
        if not byte:
            raise OSError("Marionette closed the connection")
        length += byte
    return json.loads(reader.read(int(length[:-1])))


def _processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line or environment names ``text`` (our private folder): what the browser left behind,
    crash handlers included, which leave its process group."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "cmdline").read_bytes() + b"\0" + (entry / "environ").read_bytes()
        except OSError:
            continue
        if text.encode() in blob:
            found.append(int(entry.name))
    return found


def stop_browser(popen: subprocess.Popen[bytes], browser: str, work: Path) -> str:
    """End the browser: ask it to quit (its logs end cleanly), then signal what is left. Returns how it ended."""
    how = "exited by itself"
    _normal_scheduling([popen.pid, *_processes_mentioning(str(work))])
    if popen.poll() is None:
        deadline = time.monotonic() + _QUIT_GRACE_S
        asked = (
            _marionette_quit(work / "profile", _QUIT_GRACE_S)
            if browser == FIREFOX
            else _signal(popen.pid, signal.SIGINT)
        )
        try:
            popen.wait(timeout=max(0.1, deadline - time.monotonic()) if asked else 0.1)
            how = "quit on request"
        except subprocess.TimeoutExpired:
            _signal_group(popen.pid, signal.SIGTERM)
            try:
                popen.wait(timeout=5)
                how = "terminated (SIGTERM)"
            except subprocess.TimeoutExpired:
                _signal_group(popen.pid, signal.SIGKILL)
                popen.wait(timeout=5)
                how = "killed (SIGKILL)"
    _signal_group(popen.pid, signal.SIGKILL)
    for pid in _processes_mentioning(str(work)):
        _signal(pid, signal.SIGKILL)
    return how


def _normal_scheduling(pids: list[int]) -> None:
    """Every thread of ``pids`` back to SCHED_OTHER before the browser is asked to quit. The recorder runs under
    ``chrt -f`` (the download is measured at that priority); a quitting Chromium's zygotes reap their children in a
    kernel loop that waits for work a normal-priority thread must do, and at SCHED_FIFO they spun both cores for
    minutes (load average 75) until demoted."""
    for pid in pids:
        try:
            threads = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            continue
        for tid in threads:
            try:
                if os.sched_getscheduler(tid) != os.SCHED_OTHER:
                    os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                continue


_PR_SET_PDEATHSIG = 1  # prctl(2)


def _default_quit_signals() -> None:
    """In the browser's process before it starts: SIGINT and SIGTERM as the system defines them (a shell's background
    job, and what it starts, inherits them ignored, and Chromium then ignores the SIGINT that asks it to quit); and
    SIGKILL when this driver dies, so that a driver killed by its caller's timeout leaves no browser behind (inside
    the testbed the namespace's deletion would, outside it nothing would)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# -- one download -----------------------------------------------------------------------------------------------------


def _collect_logs(dl: Download, work: Path) -> list[str]:
    """Copy the browser's logs to where the testbed keeps them; returns their names."""
    kept = []
    dl.qlog_dir.mkdir(parents=True, exist_ok=True)
    for qlog in sorted((work / "tmp").glob("qlog_*/*qlog*")):
        shutil.copyfile(qlog, dl.qlog_dir / qlog.name)
        kept.append(qlog.name)
    netlog = work / "netlog.json"
    if dl.netlog is not None and netlog.is_file():
        dl.netlog.parent.mkdir(parents=True, exist_ok=True)
        with (
            netlog.open("rb") as src,
            dl.netlog.open("wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as dst,
        ):
            shutil.copyfileobj(src, dst)
        # Chromium closes its NetLog's JSON only when it quits cleanly; a killed one leaves it open (or empty).
        complete = netlog.read_bytes()[-64:].rstrip().endswith(b"}")
        kept.append(dl.netlog.name + ("" if complete else " (incomplete: the browser did not quit cleanly)"))
    return kept


def run_download(dl: Download, log: Callable[[str], None] = print) -> int:
    """Fetch ``dl`` with a fresh browser; 0 when the download finished (the caller checks its bytes), 1 if the browser
    ended without it, 124 on timeout."""
    program = executable(dl.browser)
    if program is None:
        log(f"{dl.browser} is not installed (apt-get install {DEBIAN_PACKAGES[dl.browser]})")
        return 1
    for folder in (dl.download_dir, dl.qlog_dir, dl.keylog.parent):
        folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"quicack-{dl.browser}-"))
    status = 1
    try:
        for sub in ("downloads", "home", "tmp"):
            (work / sub).mkdir()
        make = chromium_command if dl.browser == CHROMIUM else firefox_command
        argv = make(program, dl, work)
        log(f"starting {dl.browser}: {' '.join(argv)}")
        # The browser's own output goes to a file (a pipe nobody reads would stall it once full); its tail explains a
        # failure.
        output = work / "browser.log"
        with output.open("wb") as sink:
            popen = subprocess.Popen(argv, env=os.environ | browser_environment(dl, work), stdout=sink, stderr=sink,
                                     start_new_session=True, preexec_fn=_default_quit_signals)  # fmt: skip
        started = time.monotonic()
        got = None
        while time.monotonic() - started < dl.timeout_s:
            got = finished_download(work / "downloads", dl.file_name)
            if got is not None or popen.poll() is not None:
                break
            time.sleep(_POLL_S)
        elapsed = time.monotonic() - started
        how = stop_browser(popen, dl.browser, work)
        stderr_tail = output.read_bytes().splitlines()[-5:]
        if got is None:
            got = finished_download(work / "downloads", dl.file_name)
        if got is not None:
            shutil.copyfile(got, dl.download_dir / dl.file_name)
            status = 0
            log(f"{dl.browser}: downloaded {got.stat().st_size} B in {elapsed:.2f} s after start; browser {how}")
        elif elapsed >= dl.timeout_s:
            status = 124
            log(f"{dl.browser}: no finished download within {dl.timeout_s:g} s; browser {how}")
        else:
            log(f"{dl.browser} exited ({popen.returncode}) without a finished download: "
                + " | ".join(line.decode(errors="replace") for line in stderr_tail))  # fmt: skip
        kept = _collect_logs(dl, work)
        log(f"{dl.browser}: logs kept: {', '.join(kept) or 'none'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return status


def download_from_url(browser: str, url: str, keylog: Path, qlog_dir: Path, download_dir: Path, timeout_s: float,
                      netlog: Path | None, server_chain: Path | None = None) -> Download:  # fmt: skip
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or not parts.path.strip("/"):
        raise ValueError(f"expected https://<server address>:<port>/<file>, got {url!r}")
    chain = {} if server_chain is None else {"server_chain": server_chain}
    return Download(_known(browser), parts.hostname, parts.port or 443, parts.path, keylog, qlog_dir, download_dir,
                    netlog, timeout_s, **chain)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--browser", required=True, choices=BROWSERS)
    ap.add_argument("--keylog", type=Path, required=True)
    ap.add_argument("--qlog-dir", type=Path, required=True)
    ap.add_argument("--download-dir", type=Path, required=True)
    ap.add_argument("--netlog", type=Path, help="Chromium: keep its NetLog here, gzipped")
    ap.add_argument(
        "--server-chain", type=Path, help="the PEM chain the server presents (default: the testbed's small one)"
    )
    ap.add_argument(
        "--timeout", type=float, default=30.0, help="seconds from the browser's start to the finished download"
    )
    ap.add_argument("--version", action="store_true", help="print the browser's version and exit")
    ap.add_argument("url", nargs="?")
    a = ap.parse_args(argv)
    if a.version:
        print(version(a.browser) or f"{a.browser} is not installed")
        return 0
    if a.url is None:
        ap.error("a URL is needed")
    dl = download_from_url(a.browser, a.url, a.keylog, a.qlog_dir, a.download_dir, a.timeout, a.netlog, a.server_chain)
    return run_download(dl, log=lambda line: print(line, file=sys.stderr, flush=True))


if __name__ == "__main__":
    sys.exit(main())
