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
# # imc24 Fig. 1 — handshake timeline, IACK vs WFC, from two real testbed runs

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"
# Which configuration to draw: the repetition closest to the median TTFB of each mode.
client = "aioquic"
scenario = "amplification"
rtt_ms = 9.0

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_handshake import imc24_fig01_handshake_timeline
from quicack.provenance import read_description

# %%
views = read_views(db, "handshake_runs", "runs", "packets", "frames")
description = read_description(db)
rendered = imc24_fig01_handshake_timeline(views["handshake_runs"], views["runs"], views["packets"], views["frames"], client, scenario, rtt_ms)
save(rendered, out_dir, "imc24-fig01", formats, description)
