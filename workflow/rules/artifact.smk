# Stage 5: what a reviewer opens first. After the claims are known: the report's landing page (the counts per paper
# and where each paper's claims are), one page per paper with its claims (a report entry of category "claims") and
# every caption with its artefact's claims (results/<dataset>/report/), the same overview as Markdown
# (claims_overview.md); on demand (`snakemake artifact --cores all`) the HTML report and one zip of it all.

from quicack.artifact.overview import paper_page_name
from quicack.artifact.pages import report_papers


# The landing page of `snakemake --report`: written by report_pages from claims.csv. Snakemake reads it (and the
# captions) only when it makes the report, so the paths may name files a run writes. It stays short (Snakemake
# centres it in the window; it opens with the counts in view); each paper's claims are its own entry, a page that the
# report shows in a frame that scrolls.
report: str(REPORT_PAGES_ABSOLUTE / "landing.rst")
PAPER_CLAIMS_PAGES = [REPORT_PAGES / paper_page_name(paper) for paper in report_papers()]


rule report_pages:
    input:
        claims=RESULTS / "claims.csv",
        db_receipt=DATABASE_RECEIPT,
        captions=CAPTION_SOURCES,
        code=command_code("report-pages"),
        reference=command_reference("report-pages"),
    output:
        # (`report` must not start a line here: the Snakefile parser reads that as the directive.)
        paper_pages=[report(page, caption=caption_page(page.stem), category="claims") for page in PAPER_CLAIMS_PAGES],
        paper_captions=[page.with_suffix(".rst") for page in PAPER_CLAIMS_PAGES],
        landing=REPORT_PAGES / "landing.rst",
        captions=[REPORT_PAGES / f"{Path(c).stem}.rst" for c in CAPTION_SOURCES],
        markdown=RESULTS / "claims_overview.md",
    log:
        LOGS / "report_pages.log",
    benchmark:
        BENCHMARKS / "report_pages.tsv"
    params:
        captions=REPO / "workflow" / "report",
        db=DATABASE,
        results=RESULTS,
        out=REPORT_PAGES,
    conda:
        CONDA_ENV
    shell:
        "quicack report-pages --claims {input.claims:q} --db {params.db:q} --captions {params.captions:q} "
        "--results {params.results:q} --out {params.out:q} > {log:q} 2>&1"


rule artifact:
    input:
        rules.all.input,
        rules.report_pages.output,
        docs=[REPO / name for name in ("README.md", "ARTIFACT.md", "LICENSE", "THIRD_PARTY.md", "CITATION.cff")],
        code=command_code("artifact-zip"),
        reference=command_reference("artifact-zip"),
    output:
        report=RESULTS / "artifact" / "report.html",
        bundle=RESULTS / "artifact" / f"quicack-{DATASET}.zip",
    log:
        LOGS / "artifact.log",
    params:
        snakefile=workflow.main_snakefile,
        # The report is made by Snakemake itself, with this run's whole configuration (so that `--config dataset=…`
        # reports that dataset), while this run holds the working directory's lock: hence --nolock.
        config=json.dumps(config, sort_keys=True),
        configfile=RESULTS / "artifact" / "config.json",
        results=RESULTS,
    conda:
        CONDA_ENV
    shell:
        "printf '%s' {params.config:q} > {params.configfile:q} && "
        "snakemake --report {output.report:q} --nolock -s {params.snakefile:q} --configfile {params.configfile:q} "
        "> {log:q} 2>&1 && "
        "quicack artifact-zip --report {output.report:q} --results {params.results:q} --out {output.bundle:q} >> {log:q} 2>&1"
