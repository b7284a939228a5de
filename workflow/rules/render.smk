# Stage 4: database -> figures (PDF + PNG) and tables, each from a thin jupytext notebook
# executed with papermill. Every figure carries a caption for `snakemake --report`.

rule render_imc24_pto_model:
    input:
        notebook="notebooks/imc24_pto_model.py",
        db=RESULTS / "quicack.duckdb",
    output:
        figure_outputs("imc24-fig02"),
        figure_outputs("imc24-fig04"),
        notebook=NOTEBOOKS_OUT / "imc24_pto_model.ipynb",
    log:
        LOGS / "render" / "imc24_pto_model.log",
    params:
        figures=FIGURES,
        formats=",".join(FIGURE_FORMATS),
    conda:
        "../../environment.yml"
    shell:
        "jupytext --to ipynb --output {output.notebook:q}.in.ipynb {input.notebook:q} > {log:q} 2>&1 && "
        "papermill --kernel python3 --cwd . {output.notebook:q}.in.ipynb {output.notebook:q} "
        "-p db {input.db:q} -p figures_dir {params.figures:q} -p formats {params.formats:q} >> {log:q} 2>&1 && "
        "rm {output.notebook:q}.in.ipynb"
