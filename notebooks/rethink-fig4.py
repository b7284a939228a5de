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
# # rethink Fig. 4 — congestion window over time, AR 1:2 vs 1:10

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.rethink import rethink_fig4_cwnd
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "metrics_logged")
description = read_description(db)
rendered = rethink_fig4_cwnd(views["runs"], views["metrics_logged"])
save(rendered, out_dir, "rethink-fig4", formats, description)
rendered.artefact
