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
# # imc24 Fig. 4, measured — the instant ACK's sweet spot from the testbed's Δt sweep, beside the RFC 9002 model

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_sweet_spot import imc24_fig04_measured_sweet_spot
from quicack.provenance import read_description

# %%
views = read_views(db, "handshake_runs", "runs")
description = read_description(db)
rendered = imc24_fig04_measured_sweet_spot(views["handshake_runs"], views["runs"])
save(rendered, out_dir, "imc24-fig04-measured", formats, description)
