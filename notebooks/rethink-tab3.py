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
# # rethink Table III — return-path volume, AR 1:2 vs 1:10, no loss and 1 % loss, QUIC and TCP

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.rethink import rethink_tab3_return_volume
from quicack.figures.common import save
from quicack.figures.views import read_view_if_present, read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "datagrams")
tcp_segments = read_view_if_present(db, "tcp_segments")
description = read_description(db)
rendered = rethink_tab3_return_volume(views["runs"], views["datagrams"], tcp_segments)
save(rendered, out_dir, "rethink-tab3", formats, description)
rendered.artefact
