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
# # ackfreq22 Fig. 4 — client bytes as % of server bytes per AR, measured and Eq. (3)

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.ackfreq22 import ackfreq22_fig04_client_bytes
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "ack_runs", "datagrams", "packets", "frames")
description = read_description(db)
rendered = ackfreq22_fig04_client_bytes(views["runs"], views["ack_runs"], views["datagrams"], views["packets"], views["frames"])
save(rendered, out_dir, "ackfreq22-fig04", formats, description)
rendered.artefact
