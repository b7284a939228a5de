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
# # imc24 Table 1 — instant ACK deployment per CDN: domains, largest IACK share, variation

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.imc24_scan import imc24_tab01_iack_deployment
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "scan_connections", "scan_truth")
description = read_description(db, "scan")
rendered = imc24_tab01_iack_deployment(views["scan_connections"], views["scan_truth"])
save(rendered, out_dir, "imc24-tab01", formats, description)
rendered.artefact
