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
# # imc24 Table 3 — ACK Delay of the first ACK per server implementation, Initial and Handshake space

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"
dataset = "sample"

# %%
from quicack.figures.common import save_table, testbed_provenance
from quicack.figures.data import read_views
from quicack.figures.imc24_tables import imc24_tab03_note, imc24_tab03_server_ack_delay

views = read_views(db, "runs", "frames")
table = imc24_tab03_server_ack_delay(views["runs"], views["frames"])
save_table(table, out_dir, "imc24-tab03", testbed_provenance(dataset).with_note(imc24_tab03_note(views["runs"])))
table
