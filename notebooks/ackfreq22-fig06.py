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
# # ackfreq22 Fig. 6 — distribution of the 1 MB download time on the satellite path

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.ackfreq22 import ackfreq22_fig06_download_time
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "ack_runs")
description = read_description(db)
rendered = ackfreq22_fig06_download_time(views["runs"], views["ack_runs"])
save(rendered, out_dir, "ackfreq22-fig06", formats, description)
rendered.artefact
