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
# # rethink Fig. 3 — return packets per second, TCP and QUIC at AR 1:2 and 1:10

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.rethink import rethink_fig3_return_packet_rate
from quicack.figures.common import save
from quicack.figures.views import read_view_if_present, read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "datagrams")
tcp_segments = read_view_if_present(db, "tcp_segments")
description = read_description(db)
rendered = rethink_fig3_return_packet_rate(views["runs"], views["datagrams"], tcp_segments)
save(rendered, out_dir, "rethink-fig3", formats, description)
rendered.artefact
