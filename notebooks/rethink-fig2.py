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
# # rethink Fig. 2 — return-path overhead by component, QUIC vs TCP, AR 1:2 and 1:10, no loss / 1 % loss

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/figures"
formats = "pdf,png"

# %%
from quicack.figures.rethink import rethink_fig2_return_overhead
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "ack_breakdown")
description = read_description(db)
rendered = rethink_fig2_return_overhead(views["runs"], views["ack_breakdown"])
save(rendered, out_dir, "rethink-fig2", formats, description)
rendered.artefact
