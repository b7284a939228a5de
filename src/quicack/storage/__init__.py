"""Where the dataset's tables are kept and how they are read back: `table_writer` (the one Parquet writer),
`parquet_store` (the parts' readers), `database` (the DuckDB file: a commented view per table over a snapshot's
Parquet files), `publish` (a new snapshot and database in one step), `run_batches` (packet-sized tables read a batch
of runs at a time), `path_checks` (the testbed's path checks stored as a table), `sql_command` (`quicack sql`). This
file imports nothing, so that a job depends on the storage modules it uses only (quicack.jobs.code_graph)."""
