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
# # ackfreq22 Fig. 5 — the server's congestion window, AR 2 vs AR 10, satellite, pacing off

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.ackfreq22 import ackfreq22_fig05_cwnd
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "metrics_logged")
description = read_description(db)
rendered = ackfreq22_fig05_cwnd(views["runs"], views["metrics_logged"])
save(rendered, out_dir, "ackfreq22-fig05", formats, description)
rendered.artefact
