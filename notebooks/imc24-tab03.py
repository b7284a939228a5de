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
# # imc24 Table 3 — ACK Delay of the first ACK per server implementation, Initial and Handshake space

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_tables import imc24_tab03_server_ack_delay
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "frames")
description = read_description(db)
rendered = imc24_tab03_server_ack_delay(views["runs"], views["frames"])
save(rendered, out_dir, "imc24-tab03", formats, description)
rendered.artefact
