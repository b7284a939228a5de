"""Where a dataset comes from, as its own description file says, and the words every footnote takes
from it.

A dataset folder carries ``dataset.yaml`` beside its raw folder (``data/sample/dataset.yaml`` for the
embedded one). ``quicack build-db --description`` stores it in the table ``dataset_description`` inside
the DuckDB file, so that the notebooks, which read only the database, say where the numbers come from
without knowing anything about the data's origin themselves. A database holds up to two parts, each
with its own description: ``runs`` (testbed or QIR runs) and ``scan`` (scan measurements,
``--scan-description``), because the embedded testbed runs and the embedded scan are different data.
A part without a description is kind ``unknown`` and its footnotes say so: they never guess.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast, get_args

import polars as pl
import yaml

from quicack.schema import DATASET_DESCRIPTION
from quicack.storage import database

Kind = Literal["emulated", "public-captures", "scan", "emulated-scan", "other", "unknown"]
# ``unknown`` is what a missing description means; a description file must name one of the others.
DESCRIBED_KINDS: tuple[str, ...] = tuple(k for k in get_args(Kind) if k != "unknown")
REQUIRED_FIELDS = ("name", "kind", "title")
OPTIONAL_FIELDS = ("description", "recorded_with", "source", "url", "license")
TABLE = DATASET_DESCRIPTION.name
Part = Literal["runs", "scan"]


class DescriptionError(ValueError):
    """A dataset description file that cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class DatasetDescription:
    name: str
    kind: Kind
    title: str
    description: str = ""
    # (component, version) in the file's order, e.g. ("quic-go", "v0.65.0").
    recorded_with: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    source: str = ""
    url: str = ""
    license: str = ""
    description_file: str = ""
    part: Part = "runs"

    @staticmethod
    def undescribed(name: str, part: Part = "runs") -> DatasetDescription:
        return DatasetDescription(
            name=name, kind="unknown", title="origin not described (no dataset description)", part=part
        )

    def footnote(self) -> str:
        """The sentence every footnote and table note of this dataset starts with."""
        origin = f"; source: {self.source or self.url}" if (self.source or self.url) else ""
        match self.kind:
            case "emulated":
                return f"EMULATED DATA — dataset '{self.name}': {self.title}; not the paper's measurement."
            case "emulated-scan":
                return f"EMULATED SCAN DATA — dataset '{self.name}': {self.title}; not the paper's measurement."
            case "public-captures":
                return f"Public QUIC Interop Runner captures ({self.title}{origin}), dataset '{self.name}'."
            case "scan":
                return f"Measured scan data ({self.title}{origin}), dataset '{self.name}'."
            case "other":
                return f"Dataset '{self.name}': {self.title}{origin}."
            case _:
                return f"Dataset '{self.name}': origin not described (no dataset description)."

    def source_label(self) -> str:
        """A short label for tables that name our source on every row (e.g. claims.our_source)."""
        label = {
            "emulated": "testbed emulation",
            "emulated-scan": "emulated scan",
            "public-captures": "public captures",
            "scan": "scan",
            "other": "other data",
        }.get(self.kind, "origin not described")
        return f"{label}, dataset '{self.name}'"

    def to_frame(self) -> pl.DataFrame:
        row = {
            "part": self.part,
            "name": self.name,
            "kind": self.kind,
            "title": self.title,
            "description": self.description or None,
            "recorded_with": [{"component": c, "version": v} for c, v in self.recorded_with],
            "source": self.source or None,
            "url": self.url or None,
            "license": self.license or None,
            "description_file": self.description_file or None,
        }
        return pl.DataFrame([row], schema=DATASET_DESCRIPTION.schema)

    @staticmethod
    def from_row(row: dict) -> DatasetDescription:
        return DatasetDescription(
            name=row["name"],
            kind=row["kind"] if row["kind"] in get_args(Kind) else "unknown",
            title=row["title"],
            description=row["description"] or "",
            recorded_with=tuple((item["component"], item["version"]) for item in row["recorded_with"] or []),
            source=row["source"] or "",
            url=row["url"] or "",
            license=row["license"] or "",
            description_file=row["description_file"] or "",
            part=row.get("part") or "runs",
        )


def _text(path: Path, data: dict, key: str) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str | int | float):
        raise DescriptionError(f"{path}: '{key}' must be text, not {type(value).__name__}")
    return str(value).strip()


def parse_description(data: object, path: Path) -> DatasetDescription:
    """Check a parsed description file and return it typed; every problem names the file."""
    if not isinstance(data, dict):
        raise DescriptionError(
            f"{path}: a dataset description is a mapping of fields ({', '.join(REQUIRED_FIELDS)}, …)"
        )
    unknown = sorted(set(data) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        allowed = ", ".join(REQUIRED_FIELDS + OPTIONAL_FIELDS)
        raise DescriptionError(f"{path}: unknown field(s) {', '.join(map(str, unknown))}; allowed: {allowed}")
    missing = [key for key in REQUIRED_FIELDS if not _text(path, data, key)]
    if missing:
        raise DescriptionError(f"{path}: missing required field(s) {', '.join(missing)}")
    kind = _text(path, data, "kind")
    if kind not in DESCRIBED_KINDS:
        raise DescriptionError(f"{path}: kind '{kind}' is not one of {', '.join(DESCRIBED_KINDS)}")
    recorded = data.get("recorded_with") or {}
    if not isinstance(recorded, dict) or not all(isinstance(v, str | int | float) for v in recorded.values()):
        raise DescriptionError(
            f"{path}: 'recorded_with' must map each component to its version, e.g. 'quic-go: v0.65.0'"
        )
    return DatasetDescription(
        name=_text(path, data, "name"),
        kind=cast(Kind, kind),  # checked against DESCRIBED_KINDS above
        title=_text(path, data, "title"),
        description=_text(path, data, "description"),
        recorded_with=tuple((str(c), str(v).strip()) for c, v in recorded.items()),
        source=_text(path, data, "source"),
        url=_text(path, data, "url"),
        license=_text(path, data, "license"),
        description_file=str(path),
    )


def load_description(path: Path | None, dataset: str, part: Part = "runs") -> DatasetDescription:
    """The description in ``path``; without one (None or no such file), kind 'unknown' for
    ``dataset``. A file that exists but is not a valid description is an error, never ignored."""
    if path is None or not Path(path).is_file():
        return DatasetDescription.undescribed(dataset, part)
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise DescriptionError(f"{path}: not valid YAML ({error})") from error
    except UnicodeDecodeError as error:
        raise DescriptionError(
            f"{path}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset {error.start}); save it as UTF-8"
        ) from error
    return dataclasses.replace(parse_description(data, path), part=part)


def _dataset_names(con) -> str:
    """The dataset name(s) the runs carry: what an undescribed dataset is called in its footnotes."""
    try:
        names = [
            row[0]
            for row in con.execute("SELECT DISTINCT dataset FROM runs WHERE dataset IS NOT NULL ORDER BY 1").fetchall()
        ]
    except Exception:  # noqa: BLE001 - a database without a readable runs view still gets a footnote
        names = []
    return ", ".join(names) or "unnamed"


def write_description(
    db: Path, path: Path | None, scan_path: Path | None = None, with_scan: bool = False
) -> list[DatasetDescription]:
    """Store the description of ``path`` for the runs (or 'unknown', named after the runs' dataset) and, with
    ``with_scan``, that of ``scan_path`` for the scan measurements, in ``db`` as the commented table
    ``dataset_description``; returns what was stored."""
    with database.connect(Path(db), read_only=False) as con:
        descriptions = [load_description(path, _dataset_names(con), "runs")]
        if with_scan:
            descriptions.append(load_description(scan_path, "scan", "scan"))
        database.write_commented_table(con, DATASET_DESCRIPTION, pl.concat([d.to_frame() for d in descriptions]))
    return descriptions


def read_description(db: Path, part: Part = "runs") -> DatasetDescription:
    """The description of one part of the dataset stored in ``db`` ('runs', or 'scan' for the scan figures);
    kind 'unknown' for a database built without one."""
    with database.connect(Path(db)) as con:
        stored = database.one_value(con, f"SELECT count(*) FROM duckdb_tables() WHERE table_name = '{TABLE}'")
        if not stored:
            return DatasetDescription.undescribed(_dataset_names(con) if part == "runs" else "scan", part)
        rows = con.execute(f"SELECT * FROM {TABLE} WHERE part = ?", [part]).pl()
        if rows.is_empty():
            return DatasetDescription.undescribed(_dataset_names(con) if part == "runs" else "scan", part)
    return DatasetDescription.from_row(rows.row(0, named=True))
