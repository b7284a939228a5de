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
# # imc24 Fig. 12 — TTFB when the remaining first server flight is lost, every RTT

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_ttfb import imc24_fig12_ttfb_server_flight_loss_rtts
from quicack.provenance import read_description

# %%
views = read_views(db, "handshake_runs")
description = read_description(db)
rendered = imc24_fig12_ttfb_server_flight_loss_rtts(views["handshake_runs"])
save(rendered, out_dir, "imc24-fig12", formats, description)
