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
# # imc24 Fig. 1 — handshake timeline, IACK vs WFC, from two real testbed runs

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"
dataset = "sample"
# Which configuration to draw: the repetition closest to the median TTFB of each mode.
client = "aioquic"
scenario = "amplification"
rtt_ms = 9.0

# %%
from quicack.figures.common import save_figure, testbed_provenance
from quicack.figures.data import read_views
from quicack.figures.imc24_handshake import imc24_fig01_handshake_timeline, imc24_fig01_runs

views = read_views(db, "runs", "datagrams", "packets", "frames", "handshake_runs")
iack_run, wfc_run, note = imc24_fig01_runs(views["handshake_runs"], client, scenario, rtt_ms)
fig = imc24_fig01_handshake_timeline(views["runs"], views["datagrams"], views["packets"], views["frames"], iack_run, wfc_run)
save_figure(fig, out_dir, "imc24-fig01", formats.split(","), testbed_provenance(dataset).with_note(note))
