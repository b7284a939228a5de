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

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_tables import imc24_tab04_client_defaults
from quicack.provenance import read_description

# %%
views = read_views(db, "handshake_runs")
description = read_description(db)
rendered = imc24_tab04_client_defaults(views["handshake_runs"])
save(rendered, out_dir, "imc24-tab04", formats, description)
rendered.artefact
