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
# # imc24 Fig. 2 — PTO evolution over successive RTT samples (RFC 9002 model, no measurement)

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"
dataset = "sample"

# %%
from quicack.figures.common import MODEL, save_figure
from quicack.figures.imc24 import imc24_fig02_pto_evolution

# %%
save_figure(imc24_fig02_pto_evolution(rtt_ms=20.0, cert_delay_ms=20.0), out_dir, "imc24-fig02", formats.split(","), MODEL)
