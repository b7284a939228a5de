"""Packet-sized views read a batch of runs at a time (quicack.storage.run_batches): on the recorded ACK-policy runs
(tests/data/ack_policy) written to Parquet and a real DuckDB file, every batched computation equals the same
computation on the whole in-memory tables, however small the batches."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from quicack.metrics.ack_policy import ack_policy_of_runs, ack_policy_per_run
from quicack.metrics.coalescence import handshake_datagrams
from quicack.metrics.rethink_volume import reduced_wire
from quicack.metrics.return_path import packets_per_second, return_volume, wire_packets
from quicack.metrics.selection import MissingData
from quicack.stages import derive_stage, ingest_stage
from quicack.storage import parquet_store, table_writer
from quicack.storage.database import build_database
from quicack.storage.run_batches import StoredView, batches_by_rows, in_memory, per_run_batches, rows_of_runs

PACKET_SIZED = ("datagrams", "packets", "frames", "tcp_segments")


@pytest.fixture(scope="module")
def database(ack_policy_tables: dict[str, pl.DataFrame], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("batches")
    tables = {name: frame for name, frame in ack_policy_tables.items() if name in table_writer.TABLES}
    files = {
        name: [path]
        for name, path in zip(tables, table_writer.write_tables(tables, root / "parquet", "all"), strict=True)
    }
    db = root / "quicack.duckdb"
    build_database(db, files, root)
    return db


def stored(db: Path, name: str) -> StoredView:
    return StoredView(db, name)


def test_the_fixture_has_several_runs_of_real_packets(ack_policy_tables) -> None:
    # what the equalities below rest on: several downloads, each with thousands of packets
    per_run = ack_policy_tables["packets"].group_by("run_id").len()
    assert per_run.height >= 9 and per_run["len"].min() > 1000


@pytest.mark.parametrize("max_rows", [1, 5_000, 10_000_000])
def test_ack_policies_read_in_batches_equal_the_whole_tables(ack_policy_tables, database, max_rows) -> None:
    runs = ack_policy_tables["runs"]
    whole = ack_policy_per_run(ack_policy_tables["packets"], ack_policy_tables["frames"]).sort("run_id")
    batched = per_run_batches(
        ack_policy_per_run, runs["run_id"], stored(database, "packets"), stored(database, "frames"), max_rows=max_rows
    ).sort("run_id")
    assert batched.height == runs.height
    assert batched.equals(whole)


def test_a_selection_reads_only_its_runs(ack_policy_tables, database) -> None:
    selected = ack_policy_tables["runs"].sort("run_id").head(3)
    policies = ack_policy_of_runs(selected, stored(database, "packets"), stored(database, "frames"))
    assert sorted(policies["run_id"].to_list()) == selected["run_id"].to_list()
    in_memory = ack_policy_of_runs(selected, ack_policy_tables["packets"], ack_policy_tables["frames"])
    assert policies.sort("run_id").equals(in_memory.sort("run_id"))


def test_per_run_wire_reductions_do_not_depend_on_the_batches(ack_policy_tables, database) -> None:
    ok = ack_policy_tables["runs"].filter(pl.col("status") == "ok")
    whole_wire = wire_packets(ack_policy_tables["datagrams"])
    for reduce in (return_volume, lambda wire: packets_per_second(wire, "c2s")):
        whole = reduce(whole_wire).sort(pl.all())
        batched = reduced_wire(ok, stored(database, "datagrams"), None, reduce, "the fixture's runs").sort(pl.all())
        assert batched.equals(whole)
    # per_run_batches with tiny batches: a batch per run, the same handshake datagrams
    whole = handshake_datagrams(ack_policy_tables["packets"], ack_policy_tables["frames"])
    batched = per_run_batches(
        handshake_datagrams, ok["run_id"], stored(database, "packets"), stored(database, "frames"), max_rows=1
    )
    assert batched.sort("run_id", "direction", "datagram_index").equals(
        whole.sort("run_id", "direction", "datagram_index")
    )


def test_runs_without_packets_say_so(database) -> None:
    nobody = pl.DataFrame({"run_id": ["no/such/run"]})
    with pytest.raises(MissingData, match="no captured packets"):
        reduced_wire(nobody, stored(database, "datagrams"), None, return_volume, "runs that do not exist")


def test_rows_of_runs_reads_exactly_those_runs(ack_policy_tables, database) -> None:
    two = ack_policy_tables["runs"]["run_id"].sort().to_list()[:2]
    rows = rows_of_runs(stored(database, "frames"), two)
    assert sorted(rows["run_id"].unique().to_list()) == two
    expected = ack_policy_tables["frames"].filter(pl.col("run_id").is_in(two)).height
    assert rows.height == expected
    assert rows.columns == ack_policy_tables["frames"].columns


def test_an_empty_selection_computes_on_empty_tables_of_the_right_schema(database) -> None:
    result = per_run_batches(ack_policy_per_run, [], stored(database, "packets"), stored(database, "frames"))
    assert result.is_empty()
    assert "ack_ratio_median" in result.columns


def test_batches_follow_the_row_counts() -> None:
    counts = pl.DataFrame({"run_id": ["a", "b", "c", "d", "e", "f"], "rows": [5, 5, 20, 1, 1, 1]})
    assert batches_by_rows(counts, 10) == [["a", "b"], ["c"], ["d", "e", "f"]]
    assert batches_by_rows(counts.head(0), 10) == [[]]
    assert batches_by_rows(counts, 10, max_runs=2) == [["a", "b"], ["c"], ["d", "e"], ["f"]]
    assert batches_by_rows(counts, 100, max_runs=4) == [["a", "b", "c", "d"], ["e", "f"]]


def test_tables_of_two_databases_are_refused(database, tmp_path) -> None:
    with pytest.raises(ValueError, match="several databases"):
        per_run_batches(
            lambda a, b: a, ["x"], StoredView(database, "packets"), StoredView(tmp_path / "other.duckdb", "frames")
        )


def test_a_group_derived_in_batches_of_rows_equals_it_derived_whole(tmp_path, monkeypatch) -> None:
    """The derive stage cuts a group by input rows (derive_stage.DERIVE_BATCH_ROWS): one run per batch and the whole
    group in one batch give the same six derived tables, row for row (sorted)."""
    from quicack.layout import run_groups
    from quicack.models import recovery
    from tests.conftest import ACK_POLICY_RAW

    (group,) = run_groups(ACK_POLICY_RAW)
    derived = {}
    for label, rows in (("one_run_each", 1), ("whole", 10**12)):
        parquet = tmp_path / label
        ingest_stage.ingest_group_stage(ACK_POLICY_RAW, group, "ack_policy_fixture", parquet)
        monkeypatch.setattr(derive_stage, "DERIVE_BATCH_ROWS", rows)
        derive_stage.derive_group_stage(parquet, group, recovery.RecoveryParams())
        derived[label] = {name: parquet_store.read_table(parquet, name) for name in derive_stage.DERIVED_TABLES}
    assert "ack_runs" in derive_stage.DERIVED_TABLES
    for name in derive_stage.DERIVED_TABLES:
        batched, whole = derived["one_run_each"][name], derived["whole"][name]
        assert batched.height == whole.height, name
        assert batched.sort(pl.all()).equals(whole.sort(pl.all())), name
    assert derived["whole"]["ack_runs"].height >= 9


def test_a_rebuilt_database_is_read_again_not_served_from_memory(ack_policy_tables, tmp_path) -> None:
    """Results are kept per database version: after a rebuild with fewer runs, the same call sees the new data."""
    runs = ack_policy_tables["runs"]["run_id"].sort().to_list()
    db = tmp_path / "quicack.duckdb"

    def build(run_ids: list[str], part: str) -> None:
        tables = {
            name: frame.filter(pl.col("run_id").is_in(run_ids))
            for name, frame in ack_policy_tables.items()
            if name in ("packets", "frames")
        }
        paths = table_writer.write_tables(tables, tmp_path / part, "all")
        build_database(db, {name: [path] for name, path in zip(tables, paths, strict=True)}, tmp_path)

    build(runs, "first")
    before = per_run_batches(ack_policy_per_run, runs, stored(db, "packets"), stored(db, "frames"))
    assert before.height == len(runs)
    assert per_run_batches(ack_policy_per_run, runs, stored(db, "packets"), stored(db, "frames")) is before  # kept
    build(runs[:2], "second")
    after = per_run_batches(ack_policy_per_run, runs, stored(db, "packets"), stored(db, "frames"))
    assert sorted(after["run_id"].to_list()) == runs[:2]


def test_a_small_table_is_taken_whole_and_a_packet_sized_view_is_refused(ack_policy_tables, database) -> None:
    """Claims take their small tables (runs, ack_runs) with in_memory; a StoredView there is a mistake said clearly."""
    runs = ack_policy_tables["runs"]
    assert in_memory(runs) is runs
    with pytest.raises(TypeError, match="frames is a packet-sized view"):
        in_memory(stored(database, "frames"))
