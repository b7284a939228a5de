"""The pipeline's stages as the Snakemake rules run them, one module per stage, each holding its `quicack`
subcommands (their arguments and what they run): `ingest_stage` (ingest-group, dataset-issues), `derive_stage`
(derive-group), `database_stage` (build-db and the ingest summary), `render_stage` (render-summary, merge-claims);
`ingest`: raw run folders -> the ingest tables, every problem -> ingest_issues (what `ingest_stage` runs);
`group_arguments`: how a run group is named on the command line. This file imports nothing, so that a stage's job
runs (and depends on) its own stage's code only (quicack.jobs.code_graph)."""
