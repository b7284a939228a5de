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
from quicack.figures.common import run_accounting, save_table, testbed_provenance
from quicack.figures.data import read_views
from quicack.figures.imc24_tables import imc24_tab04_client_defaults

views = read_views(db, "handshake_runs")
table = imc24_tab04_client_defaults(views["handshake_runs"])
note = (
    "Default PTO: first client datagram after its first flight, sent before any server datagram arrived (median over such runs); "
    "'> N': no run had such a probe, N = the longest wait seen before the server answered (a lower bound). Second flight: c2s "
    "datagram indices the second-client-flight loss runs dropped (calibrated per client, mode and RTT). Runs: "
    + run_accounting(views["handshake_runs"])
)
save_table(table, out_dir, "imc24-tab04", testbed_provenance(dataset).with_note(note))
table
