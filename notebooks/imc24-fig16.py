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
# # imc24 Fig. 16 — median first-PTO improvement of IACK over WFC across RTTs

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_pto import imc24_fig16_pto_improvement
from quicack.provenance import read_description

# %%
views = read_views(db, "handshake_runs")
description = read_description(db)
rendered = imc24_fig16_pto_improvement(views["handshake_runs"])
save(rendered, out_dir, "imc24-fig16", formats, description)
