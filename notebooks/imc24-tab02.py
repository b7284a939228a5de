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
from quicack.figures.common import save_table, testbed_provenance
from quicack.figures.data import read_views
from quicack.figures.imc24_tables import imc24_tab02_guidelines, imc24_tab02_note

views = read_views(db, "runs", "datagrams", "handshake_runs")
table = imc24_tab02_guidelines(views["handshake_runs"], views["runs"], views["datagrams"])
note = imc24_tab02_note(views["handshake_runs"], views["runs"], views["datagrams"], table)
save_table(table, out_dir, "imc24-tab02", testbed_provenance(dataset).with_note(note))
table
