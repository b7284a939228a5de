"""TableWriter's two appending writers (quicack_core's ParquetFileWriter, pyarrow's ParquetWriter) store the same
tables: real ngtcp2 and quic-go 1 MB transfers' qlog rows, written in many row groups by each, read back equal by
polars, pyarrow and DuckDB (types, nulls, values), with the same row groups, column-chunk statistics (what a reader
skips row groups by: storage.run_batches reads run_id ranges) and dictionary-encoded columns."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from quicack.qlog import iter_qlog
from quicack.storage.parquet_store import read_table_runs
from quicack.storage.table_writer import TableWriter

quicack_core = pytest.importorskip("quicack_core")
if not hasattr(quicack_core, "ParquetFileWriter"):
    pytest.skip("quicack_core without ParquetFileWriter", allow_module_level=True)

DATA = Path(__file__).parent / "data" / "loopback"
QLOGS = [  # real transfers, client and server
    DATA / "ngtcp2_ngtcp2/transfer_1MB/1/server/qlog/6975531ec4163a0e08cc8b65302b3cef66e5.sqlog",
    DATA / "quic-go_quic-go/transfer_1MB/1/client/qlog/34a28a6593f0610c0c73067cf5afb3e2_client.sqlog",
]
NAMES = ("packets", "frames", "metrics_logged")


def _write(folder: Path, writer: str, row_group_rows: int) -> dict[str, Path]:
    with TableWriter.in_folder(folder, NAMES, row_group_rows, writer=writer) as tables:
        for number, path in enumerate(QLOGS):
            for batch in iter_qlog(path, f"run-{number}", None, batch_events=300):
                for name in NAMES:
                    tables.write(name, getattr(batch, name))
    return tables.paths


def _same(a: object, b: object) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], dict[str, Path]]:
    root = tmp_path_factory.mktemp("writers")
    return _write(root / "pyarrow", "pyarrow", 200), _write(root / "compiled", "compiled", 200)


@pytest.mark.parametrize("name", NAMES)
def test_the_compiled_writer_stores_the_table_as_pyarrow_does(
    written: tuple[dict[str, Path], dict[str, Path]], name: str
) -> None:
    old_path, new_path = written[0][name], written[1][name]
    old, new = pq.ParquetFile(old_path), pq.ParquetFile(new_path)
    assert "parquet-rs" in new.metadata.created_by and "parquet-cpp" in old.metadata.created_by
    # several row groups of the same rows each (a row group ends where 200 rows have come)
    assert old.metadata.num_row_groups > 3
    assert [old.metadata.row_group(i).num_rows for i in range(old.metadata.num_row_groups)] == [
        new.metadata.row_group(i).num_rows for i in range(new.metadata.num_row_groups)
    ]
    # pyarrow: the same Arrow types and values
    assert new.schema_arrow == old.schema_arrow
    assert pq.read_table(new_path).equals(pq.read_table(old_path))
    # polars: the same frame (types, nulls, values)
    assert pl.read_parquet(new_path).equals(pl.read_parquet(old_path), null_equal=True)
    # DuckDB: the same column types and rows in file order
    with duckdb.connect() as db:
        query = "SELECT * FROM read_parquet(?)"
        assert db.execute(f"DESCRIBE {query}", [str(new_path)]).fetchall() == db.execute(
            f"DESCRIBE {query}", [str(old_path)]).fetchall()  # fmt: skip
        old_rows, new_rows = (db.execute(query, [str(p)]).fetchall() for p in (old_path, new_path))
    assert len(new_rows) == len(old_rows) == old.metadata.num_rows
    assert all(all(map(_same, a, b)) for a, b in zip(old_rows, new_rows, strict=True))
    # per row group and column: the statistics a reader skips row groups by, and dictionary encoding exactly
    # for the text columns
    text = {f.name for f in old.schema_arrow if str(f.type) == "large_string"}
    assert {"run_id", "vantage"} <= text
    for group in range(old.metadata.num_row_groups):
        for column in range(old.metadata.num_columns):
            a, b = old.metadata.row_group(group).column(column), new.metadata.row_group(group).column(column)
            assert a.path_in_schema == b.path_in_schema
            sa, sb = a.statistics, b.statistics
            assert (sa.has_min_max, sa.null_count) == (sb.has_min_max, sb.null_count), a.path_in_schema
            if sa.has_min_max:
                assert (_same(sa.min, sb.min), _same(sa.max, sb.max)) == (True, True), a.path_in_schema
            dictionary = a.path_in_schema in text
            assert (a.dictionary_page_offset is not None) == (b.dictionary_page_offset is not None) == dictionary


def test_rows_of_runs_are_read_from_the_compiled_writers_row_groups(
    written: tuple[dict[str, Path], dict[str, Path]],
) -> None:
    old_path, new_path = written[0]["frames"], written[1]["frames"]
    root = new_path.parent.parent
    for writer, path in (("pyarrow", old_path), ("compiled", new_path)):
        (root / "part" / "frames").mkdir(parents=True, exist_ok=True)
        (root / "part" / "frames" / f"{writer}.parquet").write_bytes(path.read_bytes())
    old, new = (read_table_runs(root / "part", "frames", writer, ["run-1"]) for writer in ("pyarrow", "compiled"))
    assert new.height > 0 and set(new["run_id"]) == {"run-1"}
    assert new.equals(old, null_equal=True)
