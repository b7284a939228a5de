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
# # imc24 §2 and §4.1 — the PTO model: Fig. 2 (PTO evolution) and Fig. 4 (numerical sweet spot)
#
# Both figures follow from the RFC 9002 formulas alone (`quicack.recovery`); no measurement.

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
figures_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.common import MODEL, save_figure
from quicack.figures.imc24 import imc24_fig02_pto_evolution, imc24_fig04_sweet_spot

# %%
save_figure(imc24_fig02_pto_evolution(rtt_ms=20.0, cert_delay_ms=20.0), figures_dir, "imc24-fig02", formats.split(","), MODEL)

# %%
save_figure(imc24_fig04_sweet_spot(), figures_dir, "imc24-fig04", formats.split(","), MODEL)
