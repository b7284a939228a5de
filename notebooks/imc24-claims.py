# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # imc24 — the paper's testbed claims beside ours (§4.1–4.2, Appendices C–F)
#
# Paper values and explanations: `data/reference/imc24_claims.csv`; our values: `quicack.claims.imc24`.

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"
dataset = "sample"

# %%
from quicack.claims.imc24 import imc24_claims
from quicack.figures.common import save_table, testbed_provenance
from quicack.figures.data import read_views

# %%
claims = imc24_claims(read_views(db, "handshake_runs", "runs", "frames", "datagrams"), dataset)
save_table(claims, out_dir, "imc24-claims", testbed_provenance(dataset))
claims.select("claim_id", "paper_value", "ours", "agrees")
