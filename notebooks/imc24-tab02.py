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
# # imc24 Table 2 — deployment guidelines from the measured TTFB, beside the paper's

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_tables import imc24_tab02_guidelines
from quicack.provenance import read_description

# %%
views = read_views(db, "handshake_runs", "runs", "datagrams")
description = read_description(db)
rendered = imc24_tab02_guidelines(views["handshake_runs"], views["runs"], views["datagrams"])
save(rendered, out_dir, "imc24-tab02", formats, description)
rendered.artefact
