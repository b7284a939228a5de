"""What a reviewer opens first: the claims overview (report landing page, captions, Markdown), the report pages
``snakemake --report`` reads, and the zip of ``snakemake artifact``."""
