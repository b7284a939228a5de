# Stage 1b: a scan in the imc24 authors' layout (config scan_dir) -> scan_connections, scan_truth (emulated scans)
# and ingest_issues, one Parquet part per vantage point and UTC day (quicack.layout.scan_folders.scan_part_key).


rule scan_part:
    input:
        raw=scan_part_inputs,
        prefixes=SCAN_PREFIXES,
        code=command_code("scan-part"),
        reference=command_reference("scan-part"),
    output:
        expand(PARQUET / "{table}" / "{{part}}.parquet", table=SCAN_TABLES),
    log:
        LOGS / "scan" / "{part}.log",
    benchmark:
        BENCHMARKS / "scan_part" / "{part}.tsv"
    params:
        root=SCAN_ROOT,
        parquet=PARQUET,
        engine=command_engine("scan-part"),
        prefixes=f"--prefix-to-asn {shlex.quote(SCAN_PREFIXES[0])}" if SCAN_PREFIXES else "",
    conda:
        CONDA_ENV
    shell:
        "quicack scan-part --root {params.root:q} --part {wildcards.part:q} --parquet {params.parquet:q} "
        "{params.prefixes} > {log:q} 2>&1"
