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
# # imc24 Fig. 11 — RTT samples exposed vs newly acknowledging ACKs (10 MB, 100 ms RTT, WFC)

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_pto import imc24_fig11_rtt_samples
from quicack.provenance import read_description

# %%
views = read_views(db, "handshake_runs")
description = read_description(db)
rendered = imc24_fig11_rtt_samples(views["handshake_runs"], rtt_ms=100.0)
save(rendered, out_dir, "imc24-fig11", formats, description)
