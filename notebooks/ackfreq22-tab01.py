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
# # ackfreq22 Table 1 — the paths as configured, and what the emulated paths delivered

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.ackfreq22 import ackfreq22_tab01_paths
from quicack.figures.common import save
from quicack.figures.views import read_view_if_present, read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "datagrams", "ack_runs")
description = read_description(db)
rendered = ackfreq22_tab01_paths(views["runs"], views["datagrams"], views["ack_runs"], read_view_if_present(db, "path_checks"))
save(rendered, out_dir, "ackfreq22-tab01", formats, description)
rendered.artefact
