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
# # ackfreq22 Table 2 — implementation survey (cited) with the ACK ratio and ACK size we measure

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.ack_policy_tables import ackfreq22_tab02_ack_policies
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "packets", "frames", "ack_runs")
description = read_description(db)
rendered = ackfreq22_tab02_ack_policies(views["runs"], views["packets"], views["frames"], views["ack_runs"])
save(rendered, out_dir, "ackfreq22-tab02", formats, description)
rendered.artefact
