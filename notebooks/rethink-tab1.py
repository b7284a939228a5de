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
# # rethink Table I — ACK functions by transport protocol (cited)

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.ack_overhead_tables import rethink_tab1_ack_functions
from quicack.figures.common import save
from quicack.provenance import read_description

# %%
description = read_description(db)
rendered = rethink_tab1_ack_functions()
save(rendered, out_dir, "rethink-tab1", formats, description)
rendered.artefact
