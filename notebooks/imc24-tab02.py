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
# # imc24 Table 2 — deployment guidelines from the measured TTFB, beside the paper's

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"
dataset = "sample"

# %%
import polars as pl

from quicack.figures.common import run_accounting, save_table, testbed_provenance
from quicack.figures.data import read_views
from quicack.figures.imc24_tables import imc24_tab02_guidelines
from quicack.metrics.guidelines import TIE_MS, classify_configurations, guidelines

views = read_views(db, "runs", "datagrams", "handshake_runs")
table = imc24_tab02_guidelines(views["handshake_runs"], views["runs"], views["datagrams"])
classified = classify_configurations(views["runs"], views["datagrams"]).filter(pl.col("condition").is_not_null())
# Only configurations with both modes measured enter a cell.
classified = classified.join(guidelines(views["handshake_runs"]).select("client_impl", "scenario", "rtt_ms"), on=["client_impl", "scenario", "rtt_ms"], how="semi")
used = views["runs"].join(classified.select("client_impl", "scenario", "rtt_ms"), on=["client_impl", "scenario", "rtt_ms"], how="semi").filter(
    pl.col("mode").is_in(["iack", "wfc"])
)
missing = table.filter(pl.col("configurations") == 0)
note = (
    "Cell = mode with the lower median TTFB (client-side capture) per client x RTT configuration; margin = median over the "
    f"configurations of WFC - IACK median TTFB (positive: IACK faster); tie = |margin| < {TIE_MS:g} ms. Amplification limit = "
    "3 x the client's first flight (UDP payload). Not measured (no such configuration in the data): "
    + ("; ".join(f"{r['certificate']} / {r['condition']}" for r in missing.iter_rows(named=True)) or "none")
    + ". IACK/WFC runs used: " + run_accounting(used)
)
save_table(table, out_dir, "imc24-tab02", testbed_provenance(dataset).with_note(note))
table
