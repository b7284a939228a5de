# Stage 1: raw run groups -> ingest tables (runs, packets, frames, metrics_logged, datagrams,
# endpoints, ingest_issues), one Parquet file per table and run group.


rule ingest_group:
    input:
        raw=group_inputs,
        code=command_code("ingest-group"),
        reference=command_reference("ingest-group"),
    output:
        expand(PARQUET / "{table}" / "{{group}}.parquet", table=INGEST_TABLES),
    log:
        LOGS / "ingest" / "{group}.log",
    benchmark:
        BENCHMARKS / "ingest_group" / "{group}.tsv"
    params:
        raw=RAW,
        dataset=DATASET,
        parquet=PARQUET,
        limits=LIMIT_OPTIONS,
        engine=command_engine("ingest-group"),
        follow=FOLLOW_OPTION,
    conda:
        CONDA_ENV
    shell:
        "quicack ingest-group --raw {params.raw:q} --group-key={wildcards.group:q} "
        "--dataset {params.dataset:q} --parquet {params.parquet:q} {params.limits} {params.follow} > {log:q} 2>&1"


rule ingest_dataset_issues:
    input:
        code=command_code("dataset-issues"),
        reference=command_reference("dataset-issues"),
    output:
        PARQUET / "ingest_issues" / "_dataset.parquet",
    log:
        LOGS / "ingest" / "_dataset.log",
    benchmark:
        BENCHMARKS / "ingest_dataset_issues.tsv"
    params:
        raw=RAW,
        parquet=PARQUET,
        # Re-checked whenever the set of run groups changes (params are a rerun trigger).
        groups=GROUPS,
        engine=command_engine("dataset-issues"),
        follow=FOLLOW_OPTION,
    conda:
        CONDA_ENV
    shell:
        # A raw_dir that holds no dataset fails the run: its reason is printed, not only kept in the log.
        "quicack dataset-issues --raw {params.raw:q} --parquet {params.parquet:q} {params.follow} > {log:q} 2>&1 "
        "|| {{ cat {log:q} >&2; exit 1; }}"
