# Stage 3: Parquet -> results/<dataset>/quicack.duckdb (commented views) + the ingest summary.


rule database:
    input:
        all_parquet(),
        code=ANALYSIS_CODE,
    output:
        db=RESULTS / "quicack.duckdb",
        summary=report(
            RESULTS / "summary.txt",
            caption="../report/summary.rst",
            category="Data",
        ),
    log:
        LOGS / "database.log",
    params:
        parquet=PARQUET,
        strict="--strict" if config["strict"] else "",
    conda:
        "../../environment.yml"
    shell:
        "quicack build-db --parquet {params.parquet:q} --db {output.db:q} "
        "--summary {output.summary:q} {params.strict} 2>&1 | tee {log:q}; exit ${{PIPESTATUS[0]}}"
