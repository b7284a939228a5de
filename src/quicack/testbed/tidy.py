"""Keep a recorded run folder small and free of this machine's paths.

A run leaves per-process logs (``logs/<process>.{stdout,stderr}``, mostly empty), the impairment
program's summary (``logs/impairment.json``, already copied into run.json) and the server's ready file
(``server/server_info.json``). They are folded into ``run.json`` — non-empty process output under
``process_output``, the server's facts under ``server_info`` — and the files removed: on a file system
with 4 KiB blocks every small file and folder costs a block, which for hundreds of runs is most of the
dataset's size. Absolute paths of the recording machine in that output (tracebacks) are made relative.

The server's keylog is removed when the client's keylog holds every one of its lines (the same TLS
secrets: the capture decodes the same), and so is the server folder if nothing else is left in it.

``python -m quicack.testbed.tidy <raw>`` applies the same to folders recorded before.
"""

from __future__ import annotations

import argparse
import json
import sysconfig
from pathlib import Path
from typing import Any

from quicack.layout import RUN_JSON

LOGS = "logs"
SERVER_INFO = Path("server") / "server_info.json"
CLIENT_KEYLOG = Path("client") / "keys.log"
SERVER_KEYLOG = Path("server") / "keys.log"
REPO_ROOT = Path(__file__).resolve().parents[3]


def scrub_paths(text: str) -> str:
    """Paths of this machine in process output, made relative: the repository root is dropped, the
    Python installation becomes ``<stdlib>`` / ``<site-packages>``."""
    paths = sysconfig.get_paths()
    replacements = {
        paths["purelib"]: "<site-packages>",
        paths["platlib"]: "<site-packages>",
        paths["stdlib"]: "<stdlib>",
        str(REPO_ROOT) + "/": "",
    }
    # Longest first: site-packages lies inside the standard library's folder.
    for absolute, relative in sorted(replacements.items(), key=lambda item: -len(item[0])):
        text = text.replace(absolute, relative)
    return text


def fold_into_run_json(run_dir: Path, run_json: dict[str, Any]) -> dict[str, Any]:
    """``run_json`` with the run's logs and server ready file folded in; those files are deleted."""
    folded = dict(run_json)
    output: dict[str, str] = dict(folded.get("process_output") or {})
    logs = run_dir / LOGS
    for path in sorted(logs.glob("*")) if logs.is_dir() else []:
        if path.name == "impairment.json":
            folded.setdefault("impairment", json.loads(path.read_text(encoding="utf-8") or "{}"))
        elif path.read_bytes().strip():
            output[path.name] = scrub_paths(path.read_text(encoding="utf-8", errors="replace"))
        path.unlink()
    if logs.is_dir():
        logs.rmdir()
    folded["process_output"] = output
    if isinstance(folded.get("failure_reason"), str):
        folded["failure_reason"] = scrub_paths(folded["failure_reason"])
    info = run_dir / SERVER_INFO
    if info.exists():
        folded["server_info"] = json.loads(info.read_text(encoding="utf-8") or "{}")
        info.unlink()
        _remove_if_empty(info.parent)
    return folded


def _keylog_lines(path: Path) -> set[str]:
    return {line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()}


def _remove_if_empty(folder: Path) -> bool:
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        return True
    return False


def drop_redundant_server_keylog(run_dir: Path) -> bool:
    """Remove ``server/keys.log`` when ``client/keys.log`` holds all its lines (and the server folder
    if that leaves it empty); True if anything was removed. A server keylog with any secret of its own stays."""
    server, client = run_dir / SERVER_KEYLOG, run_dir / CLIENT_KEYLOG
    if not (server.is_file() and client.is_file()) or not _keylog_lines(server) <= _keylog_lines(client):
        return _remove_if_empty(server.parent)
    server.unlink()
    _remove_if_empty(server.parent)
    return True


def write_run_json(run_dir: Path, data: dict[str, Any]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_JSON).write_text(json.dumps(data, indent=1, default=str) + "\n", encoding="utf-8")


def tidy_raw(raw_root: Path) -> int:
    """Fold every run folder below ``raw_root`` that still has its logs and drop redundant server
    keylogs; returns how many run folders changed."""
    changed = 0
    for run_json_path in sorted(raw_root.rglob(RUN_JSON)):
        run_dir = run_json_path.parent
        dropped = drop_redundant_server_keylog(run_dir)
        if not (run_dir / LOGS).is_dir() and not (run_dir / SERVER_INFO).exists():
            changed += dropped
            continue
        write_run_json(run_dir, fold_into_run_json(run_dir, json.loads(run_json_path.read_text(encoding="utf-8"))))
        changed += 1
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", type=Path)
    args = parser.parse_args(argv)
    print(f"{tidy_raw(args.raw)} run folders tidied")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
