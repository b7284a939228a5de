# Stage 4: database -> figures (PDF + PNG) and tables (CSV, Markdown, LaTeX), each from its own
# thin jupytext notebook (notebooks/<id>.py) executed with papermill. One rule per notebook, so
# that every artefact has its exact outputs and its caption (workflow/report/<id>.rst) in
# `snakemake --report`.

for artefact_id in RENDERED:

    rule:
        name:
            f"render_{artefact_id.replace('-', '_')}"
        input:
            notebook=str(NOTEBOOKS / f"{artefact_id}.py"),
            db_receipt=DATABASE_RECEIPT,
            code=notebook_code(NOTEBOOKS / f"{artefact_id}.py"),
            reference=notebook_reference(NOTEBOOKS / f"{artefact_id}.py"),
        output:
            rendered_outputs(artefact_id),
            notebook=NOTEBOOKS_OUT / f"{artefact_id}.ipynb",
        log:
            LOGS / "render" / f"{artefact_id}.log",
        benchmark:
            BENCHMARKS / "render" / f"{artefact_id}.tsv"
        # A Jupyter kernel that dies while starting ("Kernel died before replying to kernel_info": two kernels
        # racing for the same ZeroMQ ports when many notebooks start at once, seen under SLURM) is not the
        # notebook's fault: the job is tried again.
        retries: 2
        params:
            db=DATABASE,
            out_dir=FIGURES if is_figure(artefact_id) else TABLES,
            formats=",".join(FIGURE_FORMATS),
            engine=notebook_engine(NOTEBOOKS / f"{artefact_id}.py"),
        conda:
            CONDA_ENV
        shell:
            "jupytext --to ipynb --output {output.notebook:q}.in.ipynb {input.notebook:q} > {log:q} 2>&1 && "
            "papermill --kernel python3 --cwd . {output.notebook:q}.in.ipynb {output.notebook:q} "
            "-p db {params.db:q} -p out_dir {params.out_dir:q} -p formats {params.formats:q} >> {log:q} 2>&1 && "
            "rm {output.notebook:q}.in.ipynb"


rule claims:
    input:
        tables=[TABLES / f"{artefact_id}.csv" for artefact_id in RENDERED if artefact_id.endswith("-claims")],
        code=command_code("merge-claims"),
        reference=command_reference("merge-claims"),
    output:
        report(
            RESULTS / "claims.csv",
            caption=caption_page("claims"),
            category="claims",
        ),
    log:
        LOGS / "render" / "claims.log",
    benchmark:
        BENCHMARKS / "claims.tsv"
    conda:
        CONDA_ENV
    shell:
        "quicack merge-claims {input.tables:q} --out {output:q} > {log:q} 2>&1"


rule render_summary:
    input:
        statuses=[render_status(artefact_id) for artefact_id in RENDERED],
        code=command_code("render-summary"),
        reference=command_reference("render-summary"),
    output:
        report(
            RESULTS / "rendering.txt",
            caption=caption_page("rendering"),
            category="Data",
        ),
    log:
        LOGS / "render" / "rendering.log",
    benchmark:
        BENCHMARKS / "render_summary.tsv"
    params:
        strict="--strict" if STRICT else "",
    conda:
        CONDA_ENV
    shell:
        "quicack render-summary {input.statuses:q} --out {output:q} {params.strict} > {log:q} 2>&1"


# The end of a run says what was drawn from the dataset, from models, and what not (print_rendering, common.smk).
onsuccess:
    print_rendering()


# A failed notebook stops render_summary: rendering.txt is then written here (rendering_after_a_failure, common.smk).
onerror:
    rendering_after_a_failure()
