# Emulation testbed: runs a matrix of real QUIC clients against real servers (imc24's IACK/WFC quic-go server, the
# aioquic server, quinn, ngtcp2, Linux TCP) through client/router/server network namespaces and writes the raw
# layout (<out>/<server>_<client>/<testcase>/<rep>/).
# Needs root; `python -m quicack.testbed.run` refuses clearly otherwise. Uses only config["testbed"];
# every rule name starts with testbed_. From the repository root:
#
#   snakemake testbed_all --cores 1 --configfile config/testbed.yaml       # the embedded sample dataset
#   snakemake testbed_all --cores 1 --configfile config/testbed_ci.yaml    # the small CI matrix
#
# One job per run group (client × mode × scenario × RTT × file, all repetitions; loss scenarios first
# calibrate their drop lists on a no-loss baseline). Jobs hold the `testbed` resource, one at a
# time by default (profiles/default), so that runs do not compete for the two CPU cores that the
# emulated delay depends on; raise it with
# --resources testbed=N on bigger machines. The analysis rules never depend on these outputs.

from quicack.testbed.scenarios import expand as _tb_expand
from quicack.testbed.scenarios import group_to_json as _tb_group_json
from quicack.testbed.scenarios import in_part as _tb_in_part

# On a cluster (profiles/slurm) the testbed still runs on the submitting host: it needs root, network
# namespaces and the emulated links' CPU cores to itself, none of which a batch job gets.
localrules:
    testbed_all,
    testbed_group,


_TB = config.get("testbed") or {}
if _TB:
    validate(_TB, "../schemas/testbed.schema.yaml")
_TB_OUT = Path(_TB.get("out", f"data/{_TB.get('dataset', 'testbed')}/raw"))
_TB_LOGS = Path("results") / "testbed_logs" / _TB.get("dataset", "testbed")
# QUICACK_TESTBED_PART=<part>: only the groups of the blocks with that `part` (a session-sized share of a long matrix,
# e.g. config/testbed_paper_conditions.yaml).
_TB_PART = os.environ.get("QUICACK_TESTBED_PART") or None
_TB_GROUPS = {g.key: _tb_group_json(g) for g in _tb_expand(_TB) if _tb_in_part(g, _TB_PART)} if _TB else {}
_TB_KEYS = list(_TB_GROUPS)


rule testbed_all:
    input:
        [_TB_OUT / key / "group.json" for key in _TB_KEYS],


rule testbed_group:
    output:
        _TB_OUT / "{server}_{client}" / "{testcase}" / "group.json",
    wildcard_constraints:
        server="[^_/]+",
        client="[^/]+",
        testcase="[^/]+",
    params:
        # Only this group's settings: editing another part of the config does not re-run recorded groups.
        group=lambda wc: _TB_GROUPS[f"{wc.server}_{wc.client}/{wc.testcase}"],
        out=_TB_OUT,
    resources:
        testbed=1,
    log:
        _TB_LOGS / "{server}_{client}" / "{testcase}.log",
    conda:
        CONDA_ENV
    shell:
        "python -m quicack.testbed.run --group-json {params.group:q} --out {params.out:q} > {log:q} 2>&1"
