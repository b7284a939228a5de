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
# # imc24 Fig. 4 — numerical sweet spot of the instant ACK (RFC 9002 model, no measurement)

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"
dataset = "sample"

# %%
from quicack.figures.common import MODEL, save_figure
from quicack.figures.imc24 import imc24_fig04_sweet_spot

# %%
save_figure(imc24_fig04_sweet_spot(), out_dir, "imc24-fig04", formats.split(","), MODEL)
