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
# # ackfreq22 Table 3 — minimum ACK overhead per received packet, recomputed from header sizes

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.ack_overhead_tables import ackfreq22_tab03_min_ack_overhead
from quicack.figures.common import save
from quicack.provenance import read_description

# %%
description = read_description(db)
rendered = ackfreq22_tab03_min_ack_overhead()
save(rendered, out_dir, "ackfreq22-tab03", formats, description)
rendered.artefact
