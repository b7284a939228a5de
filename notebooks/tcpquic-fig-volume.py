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
# # tcpquic — volume of ACKs, no loss and 1 % loss

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.tcpquic import tcpquic_fig_volume_acks
from quicack.figures.common import save
from quicack.figures.views import read_view_if_present, read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "datagrams")
tcp_segments = read_view_if_present(db, "tcp_segments")
description = read_description(db)
rendered = tcpquic_fig_volume_acks(views["runs"], views["datagrams"], tcp_segments)
save(rendered, out_dir, "tcpquic-fig-volume", formats, description)
rendered.artefact
