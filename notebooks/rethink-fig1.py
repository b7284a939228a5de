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
# # rethink Fig. 1 — CDF of return-path packet sizes after the first RTT, 10 MB, QUIC vs TCP

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.rethink import rethink_fig1_return_packet_sizes
from quicack.figures.common import save
from quicack.figures.views import read_view_if_present, read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "datagrams")
tcp_segments = read_view_if_present(db, "tcp_segments")
description = read_description(db)
rendered = rethink_fig1_return_packet_sizes(views["runs"], views["datagrams"], tcp_segments)
save(rendered, out_dir, "rethink-fig1", formats, description)
rendered.artefact
