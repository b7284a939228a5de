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
# # ackfreq22 Table 5 — share of ACKs sent because the ACK-delay timer fired

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.ackfreq22 import ackfreq22_tab05_timer_acks
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "ack_runs")
description = read_description(db)
rendered = ackfreq22_tab05_timer_acks(views["runs"], views["ack_runs"])
save(rendered, out_dir, "ackfreq22-tab05", formats, description)
rendered.artefact
