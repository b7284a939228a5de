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
# # imc24 scan claims (§4.3, Appendices D and G) — the paper's numbers beside ours

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.claims.imc24_scan_claims import imc24_scan_claims
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "scan_connections", "scan_truth")
description = read_description(db, "scan")
rendered = imc24_scan_claims(views, description)
save(rendered, out_dir, "imc24-scan-claims", formats, description)
rendered.artefact.select("claim_id", "paper_value", "ours", "verdict")
