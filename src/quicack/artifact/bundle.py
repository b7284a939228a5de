"""One zip a reviewer can open (``snakemake artifact``): the HTML report, the claims overview (and each paper's claims
page, also in the report), every figure and table, the summaries, and the documents that say what it all is (README,
ARTIFACT.md, licences, citation)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from pathlib import Path

# From the dataset's results folder: the overview and summaries, then every artefact in each of its formats.
RESULT_FILES = ("claims.csv", "claims_overview.md", "summary.txt", "rendering.txt", "ingest_issues.csv")
RESULT_PATTERNS = ("figures/*.pdf", "figures/*.png", "figures/*.svg", "tables/*.csv", "tables/*.md", "tables/*.tex",
                   "report/claims-*.html")  # fmt: skip
REPOSITORY_FILES = ("README.md", "ARTIFACT.md", "LICENSE", "THIRD_PARTY.md", "CITATION.cff")
# A fixed time for every member: the same inputs give the same zip, byte for byte.
_MEMBER_TIME = (1980, 1, 1, 0, 0, 0)


def bundle_members(report: Path, results: Path, repository: Path) -> list[tuple[Path, str]]:
    """(file, name in the zip) for everything the bundle holds, in a fixed order; missing optional files are left
    out (a dataset without figures of some format)."""
    members = [(report, "report.html")]
    members += [(results / name, name) for name in RESULT_FILES if (results / name).is_file()]
    for pattern in RESULT_PATTERNS:
        members += [(path, path.relative_to(results).as_posix()) for path in sorted(results.glob(pattern))]
    members += [(repository / name, f"repository/{name}") for name in REPOSITORY_FILES if (repository / name).is_file()]
    return members


def write_bundle(zip_path: Path, members: Iterable[tuple[Path, str]], top: str) -> int:
    """Write the zip with every member under ``top/``; returns how many files it holds."""
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    partial = zip_path.with_name(zip_path.name + ".partial")
    count = 0
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path, name in members:
            info = zipfile.ZipInfo(f"{top}/{name}", date_time=_MEMBER_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
            count += 1
    partial.replace(zip_path)
    return count
