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
# # imc24 Table 5 — CDN to origin AS numbers, with this scan's connections per AS

# %% tags=["parameters"]
db = "results/sample/quicack.duckdb"
out_dir = "results/sample/tables"
formats = "pdf,png"

# %%
from quicack.figures.imc24_scan import imc24_tab05_cdn_asn
from quicack.figures.common import save
from quicack.figures.views import read_views
from quicack.provenance import read_description

# %%
views = read_views(db, "scan_connections")
description = read_description(db, "scan")
rendered = imc24_tab05_cdn_asn(views["scan_connections"])
save(rendered, out_dir, "imc24-tab05", formats, description)
rendered.artefact
