"""Dataset descriptions: the loader (good, missing and bad files), the footnote's words per kind, and
the one-row table build-db stores in the database. The bad files are hand-made (malformed input)."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from quicack.provenance import (
    DatasetDescription,
    DescriptionError,
    load_description,
    read_description,
    write_description,
)
from quicack.rendered import Rendered

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample" / "dataset.yaml"
SCAN_DESCRIPTION = REPO / "data" / "scan" / "dataset.yaml"


def test_the_embedded_dataset_describes_itself_as_emulated_with_its_versions():
    description = load_description(SAMPLE, "ignored")
    assert (description.name, description.kind) == ("sample", "emulated")
    components = dict(description.recorded_with)
    assert {"testbed", "aioquic", "quic-go", "go-x-net", "ngtcp2", "quinn"} <= set(components)
    # The commits that recorded the imc24 runs (imc24's server) and the Table 3 handshakes, as run.json names them.
    assert {"f296b0aa", "d494ae51", "613cfc28"} <= set(re.findall(r"\b[0-9a-f]{8}\b", components["testbed"]))
    assert "1.7.2" in components["aioquic"]
    assert description.footnote().startswith("EMULATED DATA — dataset 'sample': ")


def test_a_missing_description_is_unknown_and_says_so(tmp_path):
    for path in (None, tmp_path / "dataset.yaml"):
        description = load_description(path, "mine")
        assert (description.name, description.kind) == ("mine", "unknown")
        assert description.footnote() == "Dataset 'mine': origin not described (no dataset description)."
        assert "EMULATED" not in description.footnote()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nkind: emulated\n", "missing required field(s) title"),
        ("name: x\nkind: simulated\ntitle: t\n", "kind 'simulated' is not one of emulated, public-captures"),
        ("name: x\nkind: scan\ntitle: t\nlicence: MIT\n", "unknown field(s) licence"),
        ("name: x\nkind: scan\ntitle: t\nrecorded_with: [quic-go]\n", "'recorded_with' must map"),
        ("- just\n- a list\n", "is a mapping of fields"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
    ids=["no-title", "bad-kind", "typo", "versions-as-list", "not-a-mapping", "not-yaml"],
)
def test_hand_made_bad_description_files_fail_with_the_file_and_the_reason(tmp_path, text, message):
    path = tmp_path / "dataset.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DescriptionError) as error:
        load_description(path, "x")
    assert str(path) in str(error.value) and message in str(error.value)


@pytest.mark.parametrize(
    ("kind", "starts"),
    [
        ("emulated", "EMULATED DATA — dataset 'd': QUIC runs"),
        ("emulated-scan", "EMULATED SCAN DATA — dataset 'd': QUIC runs"),
        (
            "public-captures",
            "Public QUIC Interop Runner captures (QUIC runs; source: interop.seemann.io), dataset 'd'.",
        ),
        ("scan", "Measured scan data (QUIC runs; source: interop.seemann.io), dataset 'd'."),
        ("other", "Dataset 'd': QUIC runs; source: interop.seemann.io."),
    ],
)
def test_footnote_wording_per_kind(kind, starts):
    description = DatasetDescription("d", kind, "QUIC runs", url="interop.seemann.io")
    assert description.footnote().startswith(starts)
    assert ("EMULATED" in description.footnote()) == kind.startswith("emulated")
    # A table or figure built on it starts its footnote with those words; a model figure never does.
    assert Rendered(None, note="How to read it.").footnote(description) == f"{description.footnote()} How to read it."
    assert Rendered(None, model=True).footnote(description).startswith("Computed from the RFC 9002 formulas")


def test_claims_name_our_source_from_the_description():
    assert DatasetDescription("sample", "emulated", "t").source_label() == "testbed emulation, dataset 'sample'"
    assert DatasetDescription("qir", "public-captures", "t").source_label() == "public captures, dataset 'qir'"


def test_build_db_stores_the_description_and_an_undescribed_dataset_is_named_after_its_runs(tmp_path):
    db = tmp_path / "quicack.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE VIEW runs AS SELECT 'mine' AS dataset")
    assert write_description(db, None)[0].kind == "unknown"
    assert read_description(db) == DatasetDescription.undescribed("mine")
    (stored,) = write_description(db, SAMPLE)
    assert read_description(db) == stored and stored.recorded_with
    # A database with scan measurements describes them apart: the embedded scan is other data than the runs.
    runs, scan = write_description(db, SAMPLE, SCAN_DESCRIPTION, with_scan=True)
    assert (runs.part, runs.kind, scan.part, scan.kind) == ("runs", "emulated", "scan", "emulated-scan")
    assert read_description(db, "scan") == scan and read_description(db) == runs
    assert "EMULATED SCAN DATA" in read_description(db, "scan").footnote()
    with duckdb.connect(str(db), read_only=True) as con:
        comments = con.execute(
            "SELECT comment FROM duckdb_columns() WHERE table_name = 'dataset_description'"
        ).fetchall()
        assert comments and all(c for (c,) in comments)
        assert con.execute("SELECT kind, recorded_with[1].component FROM dataset_description").fetchone() == (
            "emulated",
            "testbed",
        )


def test_a_database_without_the_table_is_undescribed(tmp_path):
    db = tmp_path / "old.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE VIEW runs AS SELECT 'old' AS dataset")
    assert read_description(db).footnote() == "Dataset 'old': origin not described (no dataset description)."


def test_build_db_refuses_a_bad_description_and_leaves_no_database(tmp_path, capsys):
    from quicack.cli import main

    bad = tmp_path / "dataset.yaml"
    bad.write_text("name: x\nkind: bogus\ntitle: t\n", encoding="utf-8")  # hand-made, malformed
    (tmp_path / "parquet").mkdir()
    db = tmp_path / "quicack.duckdb"
    common = [
        "build-db",
        "--parquet",
        str(tmp_path / "parquet"),
        "--db",
        str(db),
        "--summary",
        str(tmp_path / "summary.txt"),
    ]
    assert main([*common, "--description", str(bad)]) == 2
    assert not db.exists() and "kind 'bogus'" in capsys.readouterr().err
    assert main([*common, "--description", str(SAMPLE)]) == 0
    assert read_description(db).kind == "emulated"


def test_build_db_names_a_handmade_latin1_description_instead_of_a_traceback(tmp_path, capsys):
    from quicack.cli import main

    latin1 = tmp_path / "dataset.yaml"
    latin1.write_bytes("name: x\nkind: emulated\ntitle: Caf\u00e9 runs\n".encode("latin-1"))  # hand-made: not UTF-8
    (tmp_path / "parquet").mkdir()
    db = tmp_path / "quicack.duckdb"
    argv = [
        "build-db",
        "--parquet",
        str(tmp_path / "parquet"),
        "--db",
        str(db),
        "--summary",
        str(tmp_path / "summary.txt"),
    ]
    assert main([*argv, "--description", str(latin1)]) == 2
    assert not db.exists()
    assert f"{latin1}: not UTF-8 text (byte 0xe9 at offset 33); save it as UTF-8" in capsys.readouterr().err


# Hand-made hostile titles (a dataset.yaml is the user's text): a line break followed by a LaTeX command, a mathtext
# fragment that does not parse, and both in the source field.
HOSTILE_TITLES = [
    "Innocent runs\n\\input{/etc/passwd}",
    "cost $\\frac{1}{$ per run",
    "50% of runs_\r\\immediate\\write18{rm -rf ~} $x^2$ & more",
]


@pytest.mark.parametrize("title", HOSTILE_TITLES, ids=["tex-input", "mathtext", "mixed"])
def test_a_hostile_title_stays_text_in_every_output_format(tmp_path, title):
    import matplotlib.pyplot as plt
    import polars as pl

    from quicack.figures.common import save

    description = DatasetDescription("d", "other", title, source="$$\n\\input{x}")
    # a table whose cells carry such text too (a folder name or an explanation)
    table = pl.DataFrame({"run_id": ["group_1/\\input{/etc/passwd}"], "share_%": [0.5]})
    save(Rendered(table, runs=None), tmp_path, "t-tab", "", description)
    tex = (tmp_path / "t-tab.tex").read_text(encoding="utf-8")
    live = [line for line in tex.splitlines() if not line.startswith("%")]
    assert not any("\\input" in line or "\\immediate" in line or "\\write" in line for line in live), tex
    assert "\\textbackslash input\\{/etc/passwd\\}" in tex and "share\\_\\%" in tex
    assert tex.splitlines()[-1] == "% " + " ".join((f"Dataset 'd': {title}; source: " + "$$ \\input{x}.").split())
    note = (tmp_path / "t-tab.md").read_text(encoding="utf-8").splitlines()[-1]
    assert note.startswith("Dataset 'd': ") and "\\input" in note  # the note is one line, the text kept
    # figures: a drawn one and a placeholder save in every format, the '$' text drawn as it is
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    for rendered, name in (
        (Rendered(fig), "t-fig"),
        (Rendered(None, missing=f"no run ({title})"), "t-fig-placeholder"),
    ):
        paths = save(rendered, tmp_path, name, ["pdf", "png", "svg"], description)
        assert [p.suffix for p in paths] == [".pdf", ".png", ".svg"] and all(p.stat().st_size > 1000 for p in paths)
