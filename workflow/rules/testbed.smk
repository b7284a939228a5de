# Emulation testbed: runs a matrix of real QUIC clients against the IACK/WFC aioquic server through
# client/router/server network namespaces and writes the raw layout (<out>/<server>_<client>/<testcase>/<rep>/).
# Needs root. Standalone include: uses only config["testbed"]; every rule name starts with testbed_.
#
#   snakemake -s workflow/rules/testbed.smk --configfile config/testbed.yaml --cores 1 testbed_all
#   snakemake -s workflow/rules/testbed.smk --configfile config/testbed_ci.yaml --cores 1 testbed_all
#
# One job per run group (client × mode × scenario × RTT × file, all repetitions; loss scenarios first
# calibrate their drop lists on a no-loss baseline). Jobs hold the `testbed` resource: by default one at a
# time, so that runs do not compete for the two CPU cores that the emulated delay depends on; raise it with
# --resources testbed=N on bigger machines.

import json as _tb_json
import os as _tb_os
import sys as _tb_sys
from pathlib import Path as _TbPath

from snakemake.utils import validate as _tb_validate

from quicack.testbed.scenarios import expand as _tb_expand

_TB = config.get("testbed") or {}
if _TB:
    _tb_validate(_TB, "../schemas/testbed.schema.yaml")
_TB_OUT = _TbPath(_TB.get("out", f"data/{_TB.get('dataset', 'testbed')}/raw")) if _TB else _TbPath("data/testbed/raw")
_TB_KEYS = [g.key for g in _tb_expand(_TB)] if _TB else []

# At most one testbed job at a time unless --resources testbed=N says otherwise.
workflow.global_resources.setdefault("testbed", 1)


rule testbed_all:
    """Every run group of config["testbed"]."""
    input:
        [str(_TB_OUT / key / "group.json") for key in _TB_KEYS],


rule testbed_group:
    """All repetitions of one run group; group.json lists their status (failed runs are data, not errors)."""
    output:
        str(_TB_OUT) + "/{server}_{client}/{testcase}/group.json",
    wildcard_constraints:
        server="[^_/]+",
        client="[^/]+",
        testcase="[^/]+",
    params:
        key=lambda w: f"{w.server}_{w.client}/{w.testcase}",
    resources:
        testbed=1,
    log:
        "results/testbed_logs/" + _TB.get("dataset", "testbed") + "/{server}_{client}/{testcase}.log",
    run:
        if _tb_os.geteuid() != 0:
            raise RuntimeError(
                "testbed_group needs root (network namespaces, iptables NFQUEUE, tc, tcpdump): "
                "run `sudo snakemake ... testbed_all`, or use the committed data/sample/raw"
            )
        shell(
            "{py} -m quicack.testbed.run --config-json {cfg:q} --group {key:q} --out {out:q} > {log:q} 2>&1",
            py=_tb_sys.executable,
            cfg=_tb_json.dumps(_TB),
            key=params.key,
            out=str(_TB_OUT),
        )
