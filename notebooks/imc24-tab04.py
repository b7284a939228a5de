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
# # imc24 Table 4 — default PTO per client and the datagrams of the second client flight

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"
dataset = "sample"

# %%
from quicack.figures.common import save_table, testbed_provenance
from quicack.figures.data import read_view
from quicack.figures.imc24_tables import imc24_tab04_client_defaults, imc24_tab04_note

handshakes = read_view(db, "handshake_runs")
table = imc24_tab04_client_defaults(handshakes)
save_table(table, out_dir, "imc24-tab04", testbed_provenance(dataset).with_note(imc24_tab04_note(handshakes)))
table
