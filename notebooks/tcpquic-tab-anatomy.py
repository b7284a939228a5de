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
# # tcpquic — anatomy of TCP and QUIC ACKs, recomputed

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.ack_overhead_tables import tcpquic_tab_anatomy
from quicack.figures.common import save
from quicack.provenance import read_description

# %%
description = read_description(db)
rendered = tcpquic_tab_anatomy()
save(rendered, out_dir, "tcpquic-tab-anatomy", formats, description)
rendered.artefact
