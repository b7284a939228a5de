"""What each Snakemake job runs and reads, computed from the source when the DAG is built (only the workflow and the
package-shape tests use it): `code_graph` (the package's import graph, read with `ast`: a job's code inputs),
`reference_use` (the data/reference files a job's functions read), `job_inputs` (both, kept between Snakemake
invocations under a hash of the package's files). This file imports nothing."""
