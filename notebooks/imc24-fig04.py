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

# %%
from quicack.figures.common import save
from quicack.figures.rfc9002_model import imc24_fig04_sweet_spot
from quicack.provenance import read_description

# %%
description = read_description(db)
rendered = imc24_fig04_sweet_spot()
save(rendered, out_dir, "imc24-fig04", formats, description)
