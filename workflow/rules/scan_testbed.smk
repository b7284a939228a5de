# Emulated Internet scan (imc24 §4.3): vantage points, CDN-like frontends, a certificate store and the package's
# scanner in network namespaces (quicack.testbed.scan), written in the authors' layout
# <out>/<vantage_point>/data/<timestamp>/. Needs root. Uses only config["scan_testbed"]; every rule name starts
# with scan_testbed_. From the repository root:
#
#   sudo snakemake scan_testbed_record --cores 1 --configfile config/testbed_scan.yaml      # data/scan/raw
#   sudo snakemake scan_testbed_record --cores 1 --configfile config/testbed_scan_ci.yaml   # the tiny CI scan
#
# One job for the whole scan: measurements run in emulated-time order and share the frontends' caches.

import json

_SCAN_TB = config.get("scan_testbed") or {}
if _SCAN_TB:
    validate(_SCAN_TB, "../schemas/testbed_scan.schema.yaml")
_SCAN_TB_OUT = Path(_SCAN_TB.get("out", f"data/{_SCAN_TB.get('dataset', 'scan')}/raw"))


rule scan_testbed_record:
    output:
        directory(_SCAN_TB_OUT),
    params:
        section=json.dumps(_SCAN_TB),
    resources:
        testbed=1,
    log:
        Path("results") / "testbed_logs" / f"{_SCAN_TB.get('dataset', 'scan')}.log",
    conda:
        CONDA_ENV
    shell:
        "python -m quicack.testbed.scan --section-json {params.section:q} --out {output:q} > {log:q} 2>&1"
