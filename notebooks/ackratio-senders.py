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
# # The ACK-ratio study's senders per scenario: goodput, the rate once under way against the path's, CPU

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.ack_senders import ackratio_senders
from quicack.figures.common import save
from quicack.figures.views import read_view_if_present, read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "runs", "ack_runs")
description = read_description(db)
rendered = ackratio_senders(views["runs"], views["ack_runs"], read_view_if_present(db, "path_checks"))
save(rendered, out_dir, "ackratio-senders", formats, description)
rendered.artefact
