"""Raw dataset → ingest tables, one run group at a time.

A dataset's raw folder follows the QUIC Interop Runner layout
``<server>_<client>/<testcase>/<repetition>/{client,server,sim}/`` with a ``run.json`` per run
(the testbed writes it); folders without ``run.json`` (the original imc24 artifact, QIR logs)
are described from their names. Every input file ends either as rows or as a row in
``ingest_issues``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import polars as pl

from quicack.layout import (
    RUN_JSON,
    RunFolder,
    capture_files,
    group_tree,
    keylog_files,
    leaves_raw,
    parse_run_folder,
    raw_entries,
    run_groups,
)
from quicack.layout.naming import describe_run_id
from quicack.layout.runs import EXTERNAL_REFUSED
from quicack.reading.issues import issue_row, issues_frame, relative_paths
from quicack.reading.limits import DEFAULT_LIMITS, Limits
from quicack.schema import INGEST, INGEST_ISSUES, RUNS, TABLES, tables_written_by
from quicack.schema.run_json import KEYS_BY_NAME, missing_keys
from quicack.storage.table_writer import PENDING_FRAMES_GATHERED

# runs columns that ingest fills itself, never from run.json.
DERIVED_RUN_COLUMNS = ("series", "status_source")
QUIC, TCP = "quic", "tcp"  # runs.transport
# Tables one run group writes (the schema says which).
INGEST_TABLES = tables_written_by(INGEST)


def run_row(
    run: RunFolder, dataset: str, raw_root: Path, follow_external_symlinks: bool = False,
    dataset_groups: Callable[[], list[str]] | None = None,
) -> tuple[dict, list[dict], frozenset[str] | None]:
    """The ``runs`` row of a run folder, from run.json or, failing that, from its path; its issues; the keys its
    run.json states (None without a run.json that can be read). ``dataset_groups`` lists the dataset's run groups
    (a series' place among them is its runs' repetition): by default `run_groups`, which reads the raw folder; a
    caller describing many runs passes a cached listing.

    Without a run.json that can be read (QIR logs as the runner writes them, the imc24 artifact's folders, a
    run.json emptied or cut) the status is left null here and inferred from the run's data after decoding
    (`Evidence`)."""
    issues: list[dict] = []
    run_json = run.path / RUN_JSON
    meta: dict | None = None
    if run_json.exists() and not follow_external_symlinks and leaves_raw(run_json, raw_root):
        issues.append(issue_row(_rel(run_json, raw_root), run.run_id, "discover", "error", EXTERNAL_REFUSED))
    elif run_json.exists():
        meta, problem = _read_run_json(run_json)
        if problem is not None:
            issues.append(issue_row(_rel(run_json, raw_root), run.run_id, "discover", "warning",
                                    f"{problem}: described from the folder name"))
    stated = frozenset(meta) if meta is not None else None
    if meta is None:  # (stated is None)
        meta = _describe_from_path(run, issues, raw_root)
    else:
        # A run.json that says part of it (a user's own runs): what it lacks, or leaves null, comes from the folder
        # name when that follows the testbed's naming; a name that does not is no problem here (run.json is the
        # description).
        from_folder = _describe_from_path(run, [], raw_root)
        meta = {**meta, **{key: value for key, value in from_folder.items() if meta.get(key) is None}}
    meta = _flatten_path(meta)
    row = {
        c.name: _typed(meta.get(c.name), c.dtype, c.name, run, raw_root, issues)
        for c in RUNS.columns
        if c.name not in DERIVED_RUN_COLUMNS
    }
    # The drop-list calibration is nested in run.json; runs carries its two flights flat.
    calibration = calibration_field if isinstance(calibration_field := meta.get("drop_calibration"), dict) else {}
    row["calibrated_first_server_flight"] = calibration.get("first_server_flight")
    row["calibrated_second_client_flight"] = calibration.get("second_client_flight")
    for name in (
        "drop_to_client",
        "drop_to_server",
        "calibrated_first_server_flight",
        "calibrated_second_client_flight",
    ):
        row[name] = _droplist(row[name], name, run, raw_root, issues)
    row["transport"] = row["transport"] or QUIC  # run.json says 'tcp' for the Linux TCP runs; older runs are QUIC
    from_path = describe_run_id(run.run_id)
    row.update(run_id=run.run_id, dataset=dataset, raw_path=run.run_id)
    for name in ("server_impl", "client_impl", "scenario", "repetition"):
        if row[name] is None:
            row[name] = from_path.get(name)
    row["series"] = from_path.get("series")
    if row["repetition"] is None and "series" in from_path:
        # One run per series folder (the artifact's all-interop-servers/<day>/): the day's place among the
        # dataset's series is the repetition, so days sort as the folders do.
        series = dataset_groups() if dataset_groups is not None else run_groups(raw_root, follow_external_symlinks)
        row["repetition"] = series.index(from_path["series"]) + 1 if from_path["series"] in series else None
    row["status_source"] = "run.json" if row["status"] is not None else None
    if row["status"] not in (None, "ok", "failed"):
        issues.append(
            issue_row(
                _rel(run.path, raw_root),
                run.run_id,
                "discover",
                "warning",
                f"unknown status {row['status']!r}; inferred from the run's data",
            )
        )
        row["status"] = row["status_source"] = None
    return row, issues, stated


def _read_run_json(path: Path) -> tuple[dict | None, str | None]:
    """run.json's object, or None and what is wrong with the file (said as it is: an empty file is not "unreadable")."""
    try:
        data = path.read_bytes()
    except OSError as error:
        return None, f"run.json unreadable ({error.strerror or error})"
    if not data.strip():
        return None, f"run.json is empty ({len(data)} bytes{', whitespace only' if data else ''})"
    try:
        meta = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        return None, f"run.json is not UTF-8 text ({error.reason} at byte {error.start})"
    except ValueError as error:
        return None, f"run.json is not JSON ({error})"
    except RecursionError:
        return None, "run.json is nested too deeply to read"
    if not isinstance(meta, dict):
        return (
            None,
            f"run.json holds a{'n' if type(meta).__name__[0] in 'aeiou' else ''} {type(meta).__name__}, not an object",
        )
    return meta, None


def _flatten_path(meta: dict) -> dict:
    """run.json keeps the path per direction (``bandwidth_mbit: {c2s, s2c}``, ``loss: {c2s, s2c}``); runs has
    one column per direction."""
    flat = dict(meta)
    for nested, column in (("bandwidth_mbit", "bandwidth_{}_mbit"), ("loss", "loss_{}")):
        per_direction = meta.get(nested)
        if isinstance(per_direction, dict):
            for direction in ("c2s", "s2c"):
                flat.setdefault(column.format(direction), per_direction.get(direction))
    # The impairment program's random drops toward the client, and the run's CPU and load (testbed.host).
    impairment = impairment_field if isinstance(impairment_field := meta.get("impairment"), dict) else {}
    s2c = s2c_field if isinstance(s2c_field := impairment.get("s2c"), dict) else {}
    lost = s2c.get("lost_indices")
    if isinstance(lost, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in lost):
        flat.setdefault("s2c_random_losses", len(lost))
        flat.setdefault(
            "s2c_random_loss_clusters", sum(1 for i, x in enumerate(lost) if i == 0 or lost[i - 1] != x - 1)
        )
    testbed = testbed_field if isinstance(testbed_field := meta.get("testbed"), dict) else {}
    host = host_field if isinstance(host_field := testbed.get("host"), dict) else {}
    cpu = cpu_field if isinstance(cpu_field := host.get("cpu_seconds"), dict) else {}
    for process in ("client", "server", "impairment"):
        flat.setdefault(f"{process}_cpu_s", cpu.get(process))
    load = host.get("loadavg_start")
    if isinstance(load, list) and load:
        flat.setdefault("host_load_1min", load[0])
    return flat


_PYTHON_TYPES = {pl.Utf8: (str,), pl.Int64: (int,), pl.Float64: (int, float), pl.Boolean: (bool,)}


def _typed(value, dtype, name: str, run: RunFolder, raw_root: Path, issues: list[dict]):
    """A run.json value if it has the column's type (a number for a number, a string for a string); else null
    and a warning, so that one wrongly typed field costs that field, not the run group."""
    if value is None or name in ("drop_to_client", "drop_to_server"):
        return value
    accepted = _PYTHON_TYPES.get(dtype, ())
    wrong_bool = isinstance(value, bool) and dtype is not pl.Boolean
    if isinstance(value, accepted) and not wrong_bool and not (isinstance(value, int) and abs(value) >= 2**63):
        return value
    issues.append(
        issue_row(
            _rel(run.path, raw_root),
            run.run_id,
            "discover",
            "warning",
            f"run.json field {name!r} is {type(value).__name__}, not {dtype}; recorded as null",
        )
    )
    return None


def _droplist(indices, name: str, run: RunFolder, raw_root: Path, issues: list[dict]) -> str | None:
    """Datagram indices as the QIR droplist string ('2_3_4'; '' = none); strings pass unchanged; anything
    else is recorded as null with a warning."""
    if indices is None or isinstance(indices, str):
        return indices
    if isinstance(indices, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in indices):
        return "_".join(str(i) for i in indices)
    issues.append(
        issue_row(
            _rel(run.path, raw_root),
            run.run_id,
            "discover",
            "warning",
            f"run.json field {name!r} is not a list of datagram indices; recorded as null",
        )
    )
    return None


def _describe_from_path(run: RunFolder, issues: list[dict], raw_root: Path) -> dict:
    """Settings encoded in folder names (imc24 artifact, QIR logs) when there is no run.json that can be read."""
    try:
        return dict(parse_run_folder(run.path, read_run_json=False))
    except (ValueError, KeyError) as error:
        issues.append(
            issue_row(
                _rel(run.path, raw_root), run.run_id, "discover", "warning", f"folder name not understood ({error})"
            )
        )
        return {}


def _rel(path: Path, raw_root: Path) -> str:
    try:
        return path.relative_to(raw_root).as_posix()
    except ValueError:
        return str(path)


def ingest_group(
    raw_root: Path, group: str, dataset: str, limits: Limits = DEFAULT_LIMITS, follow_external_symlinks: bool = False
) -> dict[str, pl.DataFrame]:
    """All ingest tables of one run group; ``limits`` bound what each input file may cost."""
    parts: dict[str, list[pl.DataFrame]] = {name: [] for name in INGEST_TABLES}
    for name, frame in ingest_group_frames(raw_root, group, dataset, limits, follow_external_symlinks):
        parts[name].append(frame)
    return {name: _concat(name, frames) for name, frames in parts.items()}


def ingest_group_frames(
    raw_root: Path, group: str, dataset: str, limits: Limits = DEFAULT_LIMITS, follow_external_symlinks: bool = False
) -> Iterator[tuple[str, pl.DataFrame]]:
    """The ingest tables of one run group as (table, frame) pairs, run after run and capture batch after batch,
    so that a writer can stream them (`quicack.storage.table_writer.TableWriter`): what is held at a time is one run's
    qlogs or one
    capture batch, not the group. The runs rows and the discovery issues come last (a run without run.json gets its
    status from its data); concatenated per table, the frames are `ingest_group`'s tables.

    Symbolic links: links to folders below the group are never followed (`quicack.layout.group_tree`), and a file
    that is a link leading outside the raw folder is read only with ``follow_external_symlinks``; each costs an
    ``ingest_issues`` row."""
    from quicack.qlog import discover_qlogs, read_qlog

    issues: list[dict] = []
    runs = PendingRuns()
    lacking: dict[str, int] = {}  # run.json key -> runs whose run.json does not say it (nor the folder name)
    group_root = raw_root / group
    tree = group_tree(group_root, raw_root)
    for link in tree.folder_links:
        issues.append(_folder_link_issue(link, raw_root))
    for link in tree.dangling_links:
        issues.append(issue_row(_rel(link, raw_root), None, "discover", "warning", "symbolic link to nothing: ignored"))

    def readable(paths: list[Path], run: RunFolder) -> list[Path]:
        """``paths`` without the links leading out of the raw folder (unless followed), each refused one an issue."""
        if follow_external_symlinks:
            return paths
        refused = [p for p in paths if leaves_raw(p, raw_root)]
        issues.extend(issue_row(_rel(p, raw_root), run.run_id, "discover", "error", EXTERNAL_REFUSED) for p in refused)
        return [p for p in paths if p not in refused]

    # The dataset's run groups, listed once for the group (and only if a run needs them), not once per run.
    dataset_groups = cache(lambda: run_groups(raw_root, follow_external_symlinks))
    for run in tree.runs:
        row, run_issues, stated = run_row(run, dataset, raw_root, follow_external_symlinks, dataset_groups)
        issues.extend(run_issues)
        # The kernel's TCP writes no qlog and no keylog (nothing is encrypted): a TCP run is missing neither.
        qlogs, missing = (
            discover_qlogs(run.path, run.run_id) if row["transport"] != TCP else ([], INGEST_ISSUES.empty())
        )
        yield "ingest_issues", relative_paths(missing, raw_root)
        kept = set(readable([path for path, _ in qlogs], run))
        evidence = Evidence()
        for path, vantage in (q for q in qlogs if q[0] in kept):
            result = read_qlog(path, run.run_id, vantage, limits)
            for name in ("packets", "frames", "metrics_logged"):
                yield name, getattr(result, name)
            # Relative to the raw folder, so that outputs do not depend on where the data sits.
            yield "endpoints", relative_paths(result.endpoints, raw_root)
            yield "ingest_issues", relative_paths(result.ingest_issues, raw_root)
            evidence.add(result.frames, datagrams=0)
        yield from _ingest_captures(run, raw_root, evidence, limits, readable)
        # No status in run.json (or none at all): the run's data tells.
        if row["status"] is None:
            row.update(evidence.status())
        # A run.json that leaves out a key an analysis needs: one row per key of the group below. (Runs without
        # run.json, QIR logs and the imc24 artifact, have none by their layout: the README says what they lack.)
        # A key run.json states as null is said (mode null: a server without the IACK/WFC modes); one it leaves out is
        # not.
        if stated is not None:
            for key in missing_keys(row):
                if key.name not in stated:
                    lacking[key.name] = lacking.get(key.name, 0) + 1
        runs.append(row)
    if not tree.runs:
        issues.append(
            issue_row(
                group,
                None,
                "discover",
                "error",
                "no run folder found (expected <group>/<testcase>/<repetition>/ with run.json or client/server/sim "
                "folders)",
            )
        )
    issues.extend(_missing_key_issue(group, key, count, runs.count) for key, count in lacking.items())
    yield "runs", runs.frame()
    yield "ingest_issues", issues_frame(issues)


class PendingRuns:
    """The runs rows of a group, in order, held as frames of the runs table: the rows wait until the group's end
    (`ingest_group_frames` yields them last), and a dict per run (46 keys, ~2.5 KB of Python objects; a row of a
    frame is ~0.4 KB) grew with the runs: ≈ 20 MiB at 100x the embedded data (quinn_quinn, 8,300 runs;
    bench/README.md, "At a hundred times the data")."""

    def __init__(self) -> None:
        self.count = 0
        self._rows: list[dict] = []
        self._frames: list[pl.DataFrame] = []

    def append(self, row: dict) -> None:
        """``row`` is final: it is converted with the next PENDING_FRAMES_GATHERED."""
        self._rows.append(row)
        self.count += 1
        if len(self._rows) >= PENDING_FRAMES_GATHERED:
            self._frames.append(pl.DataFrame(self._rows, schema=RUNS.schema))
            self._rows = []
            if len(self._frames) >= PENDING_FRAMES_GATHERED:
                self._frames = [pl.concat(self._frames, how="vertical", rechunk=True)]

    def frame(self) -> pl.DataFrame:
        """Every row appended, as one frame (one buffer per column), as the whole list of rows converts."""
        if self._rows:
            self._frames.append(pl.DataFrame(self._rows, schema=RUNS.schema))
            self._rows = []
        return pl.concat(self._frames, how="vertical", rechunk=True) if self._frames else RUNS.empty()


def _missing_key_issue(group: str, key: str, lacking: int, runs: int) -> dict[str, str | None]:
    """One row per run.json key the group's runs lack: which studies need it (`quicack.schema.run_json`).
    Information, not a warning: a run.json may say any subset of its keys (README: Your own runs), so strict mode
    does not fail on it; the analyses that need the key leave the runs out and say so."""
    return issue_row(
        group,
        None,
        "discover",
        "info",
        f"{lacking} of {runs} run(s) have a run.json that does not say {key!r} (nor does the folder name): "
        f"{'; '.join(KEYS_BY_NAME[key].needed_by)} cannot use them (README: Your own runs)",
    )


class Evidence:
    """What a run's data shows about its outcome, for runs whose recorder left no status (QIR logs, the imc24
    artifact): the QUIC Interop Runner's handshake test passes when the handshake completes, and the server's
    HANDSHAKE_DONE frame (RFC 9000 §19.20) is the sign of that on the wire and in a client's qlog."""

    def __init__(self) -> None:
        self.datagrams = 0
        self.handshake_done = False

    def add(self, frames: pl.DataFrame, datagrams: int) -> None:
        self.datagrams += datagrams
        if not self.handshake_done and not frames.is_empty():
            self.handshake_done = not frames.filter(
                (pl.col("frame_type") == "handshake_done") & (pl.col("direction") == "s2c")
            ).is_empty()

    def status(self) -> dict[str, str | None]:
        if self.handshake_done:
            return {"status": "ok", "failure_reason": None, "status_source": "inferred from capture"}
        reason = "no datagram captured" if self.datagrams == 0 else "no HANDSHAKE_DONE from the server"
        return {"status": "failed", "failure_reason": f"inferred: {reason}", "status_source": "inferred from capture"}


def _ingest_captures(
    run: RunFolder, raw_root: Path, evidence: Evidence, limits: Limits, readable
) -> Iterator[tuple[str, pl.DataFrame]]:
    from quicack.pcap.decode import decode_capture

    keylogs = readable(keylog_files(run), run)
    for path in readable(capture_files(run), run):
        for batch in decode_capture(path, keylogs, run.run_id, limits=limits):
            for name in ("datagrams", "packets", "frames", "tcp_segments"):
                yield name, getattr(batch, name)
            yield "ingest_issues", relative_paths(batch.ingest_issues, raw_root)
            evidence.add(batch.frames, batch.datagrams.height)


def _folder_link_issue(link: Path, raw_root: Path) -> dict[str, str | None]:
    if leaves_raw(link, raw_root):
        return issue_row(
            _rel(link, raw_root),
            None,
            "discover",
            "error",
            "symbolic link to a folder, leading outside the "
            "raw folder: not followed (links to folders inside a run group never are)",
        )
    return issue_row(
        _rel(link, raw_root),
        None,
        "discover",
        "warning",
        "symbolic link to a folder: not followed (its runs "
        "would count twice, or loop); the folder it leads to is read where it is",
    )




def _concat(name: str, frames: list[pl.DataFrame]) -> pl.DataFrame:
    table = TABLES[name]
    conformed = [table.conform(f) for f in frames if f is not None and not f.is_empty()]
    return pl.concat(conformed, how="vertical") if conformed else table.empty()


def unusable_raw_folder(raw_root: Path, follow_external_symlinks: bool = False) -> str | None:
    """Why ``raw_root`` cannot be a dataset (a typo, an empty folder, a folder one level off the layout), or None.
    The workflow fails on it: an empty database would answer every query with nothing and no error."""
    expected = "<raw_dir>/<server>_<client>/<testcase>/<repetition>/ holding run.json or client/server/sim folders"
    if not raw_root.is_dir():
        return f"raw_dir {raw_root} does not exist (expected {expected})"
    entries = raw_entries(raw_root, follow_external_symlinks)
    if not entries.groups:
        return f"raw_dir {raw_root} holds no run group (expected {expected})"
    runs = [run for group in entries.groups for run in group_tree(raw_root / group, raw_root).runs]
    if not runs:
        return f"raw_dir {raw_root} holds no run folder (expected {expected})"
    if all(_misplaced(run.run_id) for run in runs):
        return (
            f"raw_dir {raw_root} holds runs, but not in the layout: {runs[0].run_id!r} has no <server>_<client> "
            f"folder above <testcase>/ (expected {expected}; is raw_dir a run group or test case folder, one level too "
            "deep?)"
        )
    return None


def _misplaced(run_id: str) -> bool:
    """Whether a run folder's place names no server, client and test case (`describe_run_id`): raw_dir pointed at a
    run group (its test cases read as groups) or at a test case."""
    described = describe_run_id(run_id)
    return "server_impl" not in described or described.get("testcase", "").isdigit() or "testcase" not in described


def dataset_issues(raw_root: Path, follow_external_symlinks: bool = False) -> pl.DataFrame:
    """Problems of the dataset as a whole (missing or empty raw folder, stray files, folders that are not run groups:
    links, hidden folders without runs)."""
    issues = []
    if not raw_root.is_dir():
        issues.append(issue_row(str(raw_root), None, "discover", "error", "raw folder does not exist"))
    else:
        entries = raw_entries(raw_root, follow_external_symlinks)
        if not entries.groups:
            issues.append(
                issue_row(
                    str(raw_root),
                    None,
                    "discover",
                    "error",
                    "raw folder holds no run group (<server>_<client>/ folders)",
                )
            )
        issues.extend(
            issue_row(_rel(left.path, raw_root), None, "discover", left.severity, left.reason)
            for left in entries.left_out
        )
        for stray in sorted(
            p for p in raw_root.iterdir() if p.is_file() and not p.name.startswith(".") and p.suffix != ".md"
        ):
            issues.append(
                issue_row(
                    stray.name,
                    None,
                    "discover",
                    "warning",
                    "file at the top of the raw folder is not part of any run group; ignored",
                )
            )
    return issues_frame(issues)
