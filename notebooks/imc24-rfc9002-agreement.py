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
# # imc24 App. E, measured — each implementation's logged RTT estimator against RFC 9002, beside the paper's findings

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.figures.imc24_pto import imc24_rfc9002_agreement_table
from quicack.provenance import read_description

# %%
views = read_views(db, "rfc9002_agreement")
description = read_description(db)
rendered = imc24_rfc9002_agreement_table(views["rfc9002_agreement"])
save(rendered, out_dir, "imc24-rfc9002-agreement", formats, description)
rendered.artefact
