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
# Paper values and explanations: `data/reference/imc24_claims.csv`; our values: `quicack.claims.imc24_claims`.

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.claims.imc24_claims import imc24_claims
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "handshake_runs", "runs", "frames", "datagrams")
description = read_description(db)
rendered = imc24_claims(views, description)
save(rendered, out_dir, "imc24-claims", formats, description)
rendered.artefact.select("claim_id", "paper_value", "ours", "verdict")
