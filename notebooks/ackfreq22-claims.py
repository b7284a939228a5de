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
# # ackfreq22 — the paper's in-text numbers beside ours

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.claims.ackratio_claims import ackfreq22_claims
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "packets", "frames", "datagrams", "ack_runs")
description = read_description(db)
rendered = ackfreq22_claims(views, description)
save(rendered, out_dir, "ackfreq22-claims", formats, description)
rendered.artefact.select("claim_id", "paper_value", "ours", "verdict")
