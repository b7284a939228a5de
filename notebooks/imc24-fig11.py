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
dataset = "sample"

# %%
from quicack.figures.common import run_accounting, save_figure, testbed_provenance
from quicack.figures.data import read_view
from quicack.figures.imc24_pto import imc24_fig11_rtt_samples, rtt_sample_runs, runs_per_client_note

# %%
handshakes = read_view(db, "handshake_runs")
provenance = testbed_provenance(dataset).with_note(run_accounting(rtt_sample_runs(handshakes, 100.0), "rtt_samples_logged"))
provenance = provenance.with_note(runs_per_client_note(handshakes, 100.0))
save_figure(imc24_fig11_rtt_samples(handshakes, 100.0), out_dir, "imc24-fig11", formats.split(","), provenance)
