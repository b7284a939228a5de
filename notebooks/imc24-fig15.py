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
# # imc24 Fig. 15 — Cloudflare series, every vantage point

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.imc24_scan import imc24_fig15_cloudflare_series_per_vantage_point
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "scan_connections", "scan_truth")
description = read_description(db, "scan")
rendered = imc24_fig15_cloudflare_series_per_vantage_point(views["scan_connections"], views["scan_truth"])
save(rendered, out_dir, "imc24-fig15", formats, description)
rendered.artefact
