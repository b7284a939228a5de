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
dataset = "sample"

# %%
from quicack.figures.common import run_accounting, save_figure, testbed_provenance
from quicack.figures.data import read_view
from quicack.figures.imc24_pto import imc24_fig16_pto_improvement, pto_runs

# %%
handshakes = read_view(db, "handshake_runs")
provenance = testbed_provenance(dataset).with_note(run_accounting(pto_runs(handshakes), "first_pto_logged_ms"))
save_figure(imc24_fig16_pto_improvement(handshakes), out_dir, "imc24-fig16", formats.split(","), provenance)
