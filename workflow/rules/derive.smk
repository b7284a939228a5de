# Stage 2: ingest tables -> derived tables (rtt_samples recomputed per RFC 9002, connections).


rule derive_group:
    input:
        expand(PARQUET / "{table}" / "{{group}}.parquet", table=INGEST_TABLES),
        code=command_code("derive-group"),
        reference=command_reference("derive-group"),
    output:
        expand(PARQUET / "{table}" / "{{group}}.parquet", table=DERIVED_TABLES),
    log:
        LOGS / "derive" / "{group}.log",
    benchmark:
        BENCHMARKS / "derive_group" / "{group}.tsv"
    params:
        parquet=PARQUET,
        initial_rtt_ms=config["recovery"]["initial_rtt_ms"],
        rttvar_order=config["recovery"]["rttvar_order"],
        engine=command_engine("derive-group"),
    conda:
        CONDA_ENV
    shell:
        "quicack derive-group --parquet {params.parquet:q} --group-key={wildcards.group:q} "
        "--initial-rtt-ms {params.initial_rtt_ms} --rttvar-order {params.rttvar_order} > {log:q} 2>&1"
