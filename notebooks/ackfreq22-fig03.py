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
# # ackfreq22 Fig. 3 — the client's bytes by component, per receiver and AR

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.ackfreq22 import ackfreq22_fig03_return_components
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "ack_breakdown")
description = read_description(db)
rendered = ackfreq22_fig03_return_components(views["runs"], views["ack_breakdown"])
save(rendered, out_dir, "ackfreq22-fig03", formats, description)
rendered.artefact
