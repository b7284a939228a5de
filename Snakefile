# quicack: raw QUIC captures and qlogs -> Parquet + DuckDB -> every table and figure.
# Rules live in workflow/rules/, one file per stage. The default target stays here because
# Snakemake takes the default target only from the main Snakefile, not from includes.
# `snakemake` from the repository root finds this file and the workflow profile profiles/default/; from elsewhere:
# snakemake -s <repo>/Snakefile --configfile <yours> (config/config.yaml is read relative to the working directory).


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/scan.smk"
include: "workflow/rules/derive.smk"
include: "workflow/rules/database.smk"
include: "workflow/rules/render.smk"
include: "workflow/rules/testbed.smk"
include: "workflow/rules/scan_testbed.smk"


rule all:
    input:
        DATABASE_RECEIPT,
        RESULTS / "summary.txt",
        rendered_notebooks(),
        RESULTS / "claims.csv",
        RESULTS / "rendering.txt",
        REPORT_PAGES / "landing.rst",
        RESULTS / "claims_overview.md",


# After `all`: the artifact target builds on its inputs.
include: "workflow/rules/artifact.smk"


# Every rule is defined: the job inputs computed for them are kept for the next start (quicack.jobs.job_inputs).
JOB_INPUTS.save()
