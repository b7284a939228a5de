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
# # imc24 Fig. 10 — ACK Delay of the first Initial ACK against the RTT, per CDN, coalesced and instant ACK

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.imc24_scan import imc24_fig10_ack_delay_vs_rtt
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "scan_connections")
description = read_description(db, "scan")
rendered = imc24_fig10_ack_delay_vs_rtt(views["scan_connections"])
save(rendered, out_dir, "imc24-fig10", formats, description)
rendered.artefact
