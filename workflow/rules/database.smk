# Stage 3: Parquet -> results/<dataset>/quicack.duckdb (commented views) + the ingest summary. The declared output is
# the database's receipt (DATABASE_RECEIPT, common.smk): the database itself is replaced by a rename, never removed.


rule database:
    input:
        all_parquet(),
        code=command_code("build-db"),
        reference=command_reference("build-db"),
        description=DESCRIPTION,
        scan_description=SCAN_DESCRIPTION,
        path_checks=PATH_CHECKS,
    output:
        receipt=DATABASE_RECEIPT,
        summary=report(
            RESULTS / "summary.txt",
            caption=caption_page("summary"),
            category="Data",
        ),
        issues=RESULTS / "ingest_issues.csv",
    log:
        LOGS / "database.log",
    benchmark:
        BENCHMARKS / "database.tsv"
    params:
        parquet=PARQUET,
        engine=command_engine("build-db"),
        db=DATABASE,
        strict="--strict" if STRICT else "",
        # Only the current run groups' parts: those of removed or renamed groups are deleted, not counted.
        parts=" ".join(shlex.quote(part) for part in [*GROUPS, *SCAN_PARTS, "_dataset"]),
        description=f"--description {shlex.quote(DESCRIPTION[0])}" if DESCRIPTION else "",
        scan_description=f"--scan-description {shlex.quote(SCAN_DESCRIPTION[0])}" if SCAN_DESCRIPTION else "",
        path_checks=f"--path-checks {shlex.quote(PATH_CHECKS[0])}" if PATH_CHECKS else "",
    conda:
        CONDA_ENV
    shell:
        "quicack build-db --parquet {params.parquet:q} --db {params.db:q} --receipt {output.receipt:q} "
        "--summary {output.summary:q} --issues {output.issues:q} {params.strict} {params.description} {params.scan_description} {params.path_checks} --parts {params.parts} 2>&1 | tee {log:q}; exit ${{PIPESTATUS[0]}}"
