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
# # imc24 Fig. 3 — packet coalescence in the handshake, per client implementation

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"
# The runs whose handshakes are drawn (no loss, so every datagram is the sender's first choice).
scenario = "noloss"

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_handshake import imc24_fig03_coalescence
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "packets", "frames")
description = read_description(db)
rendered = imc24_fig03_coalescence(views["runs"], views["packets"], views["frames"], scenario)
save(rendered, out_dir, "imc24-fig03", formats, description)
