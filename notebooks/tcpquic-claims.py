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
# # tcpquic — the paper's in-text numbers beside ours

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.claims.ackratio_claims import tcpquic_claims
from quicack.figures.common import save
from quicack.figures.views import read_view_if_present, read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "packets", "frames", "datagrams")
tcp_segments = read_view_if_present(db, "tcp_segments")  # the Linux TCP runs, where the dataset has them
if tcp_segments is not None:
    views["tcp_segments"] = tcp_segments
description = read_description(db)
rendered = tcpquic_claims(views, description)
save(rendered, out_dir, "tcpquic-claims", formats, description)
rendered.artefact.select("claim_id", "paper_value", "ours", "verdict")
