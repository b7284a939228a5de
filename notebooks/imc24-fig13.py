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
# # imc24 Fig. 13 — TTFB when the second client flight is lost, every RTT

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"
dataset = "sample"

# %%
from quicack.figures.common import run_accounting, save_figure, testbed_provenance
from quicack.figures.data import read_view
from quicack.figures.imc24_ttfb import imc24_fig13_ttfb_client_flight_loss_rtts, select_runs

# %%
handshakes = read_view(db, "handshake_runs")
provenance = testbed_provenance(dataset).with_note(run_accounting(select_runs(handshakes, "drop_client_flight"), "ttfb_capture_ms"))
save_figure(imc24_fig13_ttfb_client_flight_loss_rtts(handshakes), out_dir, "imc24-fig13", formats.split(","), provenance)
