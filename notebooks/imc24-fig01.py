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
import polars as pl

from quicack.figures.common import run_accounting, save_figure, testbed_provenance
from quicack.figures.data import read_views
from quicack.figures.imc24_handshake import imc24_fig01_handshake_timeline, representative_run

views = read_views(db, "runs", "datagrams", "packets", "frames", "handshake_runs")
iack_run = representative_run(views["handshake_runs"], client, scenario, "iack", rtt_ms)
wfc_run = representative_run(views["handshake_runs"], client, scenario, "wfc", rtt_ms)
configuration = views["runs"].filter(
    (pl.col("client_impl") == client) & (pl.col("scenario") == scenario) & (pl.col("rtt_ms") == rtt_ms) & pl.col("mode").is_in(["iack", "wfc"])
)

# %%
fig = imc24_fig01_handshake_timeline(views["runs"], views["datagrams"], views["packets"], views["frames"], iack_run, wfc_run)
provenance = testbed_provenance(dataset).with_note(
    f"Drawn: {iack_run} and {wfc_run} (median TTFB of their configuration); configuration " + run_accounting(configuration)
)
save_figure(fig, out_dir, "imc24-fig01", formats.split(","), provenance)
