"""What each workflow job runs and reads: its code inputs (quicack.jobs.code_graph) and data/reference inputs
(quicack.jobs.reference_use), and whether it may use the compiled core, kept between Snakemake invocations.

Following the imports and reference reads of 50 notebooks and the commands took 2.0 of the 6.5 s every `snakemake`
start spent (a dry run of the default pipeline), and a SLURM job starts Snakemake twice. The answers depend only on
the package's files (sources and the data files beside them), the entry point (a notebook's text, a subcommand's
name) and the two folders' paths, so they are kept in a file keyed by all of these: SHA-256 of every file under
<source>/quicack and of each notebook. Any edit there is a different key, and the answers are computed again from
the source, never taken from an older tree.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from quicack.jobs.code_graph import PACKAGE, CodeGraph
from quicack.jobs.reference_use import ReferenceUse

# Bumped when what is kept (or how it is computed) changes, so that an older file is not read as this one.
CACHE_FORMAT = 1
CORE_MODULE = "quicack_core"


@dataclass(frozen=True)
class JobInputs:
    """One job's code inputs (sources and package data, sorted), the data/reference files it reads (sorted), and
    whether its modules may import the compiled core."""

    code: list[str]
    reference: list[str]
    uses_core: bool


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def package_fingerprint(source: Path, reference_dir: Path) -> str:
    """SHA-256 over every file of the package under `source` (path and content; bytecode caches left out) and the
    two folders' paths, which the answers' paths start with."""
    digest = hashlib.sha256(f"{CACHE_FORMAT}\n{source}\n{reference_dir}\n".encode())
    for path in sorted((source / PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(f"{path.relative_to(source)}\0{_digest(path)}\n".encode())
    return digest.hexdigest()


class WorkflowInputs:
    """The inputs of the workflow's jobs for the package under `source`, from `cache` when it holds this package's
    answers (None: no cache). `save` writes what was computed since loading."""

    def __init__(self, source: Path, reference_dir: Path, cache: Path | None) -> None:
        self.source = source
        self.reference_dir = reference_dir
        self.cache = cache
        self.fingerprint = package_fingerprint(source, reference_dir)
        self._answers: dict[str, dict] = self._load()
        self._computed = False
        self._graph: CodeGraph | None = None
        self._reference_use: ReferenceUse | None = None

    def _load(self) -> dict[str, dict]:
        if self.cache is None or not self.cache.is_file():
            return {}
        try:
            kept = json.loads(self.cache.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # a damaged cache is only slower: everything is computed again
        return kept.get("answers", {}) if isinstance(kept, dict) and kept.get("fingerprint") == self.fingerprint else {}

    @property
    def graph(self) -> CodeGraph:
        if self._graph is None:
            self._graph = CodeGraph(self.source)
        return self._graph

    @property
    def reference_use(self) -> ReferenceUse:
        if self._reference_use is None:
            self._reference_use = ReferenceUse(self.graph, self.reference_dir)
        return self._reference_use

    def _inputs(self, modules: set[str], reads: set[Path]) -> dict:
        return asdict(JobInputs(
            code=sorted(str(path) for path in self.graph.files(modules)),
            reference=sorted(str(path) for path in reads),
            uses_core=CORE_MODULE in self.graph.external_imports(modules),
        ))  # fmt: skip

    def _answer(self, key: str, compute) -> JobInputs:
        if key not in self._answers:
            self._answers[key] = compute()
            self._computed = True
        return JobInputs(**self._answers[key])

    def command(self, command: str) -> JobInputs:
        """What `quicack <command>` runs and reads."""
        return self._answer(
            f"command {command}",
            lambda: self._inputs(self.graph.command_modules(command), self.reference_use.command_reads(command)),
        )

    def script(self, script: Path) -> JobInputs:
        """What a script outside the package (a notebook) runs and reads; keyed by its path and its text."""
        return self._answer(
            f"script {script} {_digest(script)}",
            lambda: self._inputs(self.graph.script_modules(script), self.reference_use.script_reads(script)),
        )

    def save(self) -> None:
        """Keep what was computed since loading (written whole to a temporary file and renamed over the cache, so
        that Snakemake runs starting at once never read half a file). A cache that cannot be written is skipped:
        it only saves time."""
        if self.cache is None or not self._computed:
            return
        temporary = self.cache.with_name(f"{self.cache.name}.{os.getpid()}.tmp")
        try:
            self.cache.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(
                json.dumps({"fingerprint": self.fingerprint, "answers": self._answers}, sort_keys=True),
                encoding="utf-8",
            )
            os.replace(temporary, self.cache)
        except OSError:
            temporary.unlink(missing_ok=True)
        self._computed = False
