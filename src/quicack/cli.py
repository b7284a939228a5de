"""The ``quicack`` command.

User commands: ``qlog`` (ingest qlog files to Parquet), ``pcap`` (decode a capture), ``scan`` (scanner
output in the imc24 authors' layout to scan_connections), ``sql`` (query the database), ``fuzz`` (mutated
inputs through the readers), ``doctor`` (what this installation runs with; ``quicack --version`` in one line),
``artifact-claims`` (ARTIFACT.md's claims section). Pipeline commands, run by the Snakemake rules: ``ingest-group``,
``dataset-issues``, ``scan-part``, ``derive-group``, ``build-db``, ``render-summary``, ``merge-claims``,
``report-pages``, ``artifact-zip``.
"""

from __future__ import annotations

import argparse
import codecs
import io
import sys
from importlib import import_module

# Each subcommand: the function that adds its arguments and handler (`handler(args) -> exit status`), in the module
# that implements it, and its help. Only the module of the subcommand called is imported, so what a command runs is
# that module and what it imports: the code inputs the workflow gives a rule that calls it (quicack.jobs.code_graph
# reads
# this table), and `quicack --help` imports nothing.
COMMANDS: dict[str, tuple[str, str]] = {
    "qlog": ("quicack.qlog.qlog_command:add_arguments",
             "ingest qlog files or folders to Parquet (+ recomputed rtt_samples)"),
    "pcap": ("quicack.pcap.pcap_command:add_arguments",
             "decode a packet capture (QUIC, with keylog) to Parquet tables"),
    "scan": ("quicack.scan.scan_command:add_scan_arguments",
             "scanner output (QScanner, the imc24 authors' <root>/<vantage_point>/data/<timestamp>/ layout) "
             "to Parquet"),
    "sql": ("quicack.storage.sql_command:add_arguments", "run a query on the database, or open a shell without one"),
    "doctor": ("quicack.doctor:add_arguments",
               "the engines, the compiled core, tshark, Rust and the testbed's programs found"),
    "fuzz": ("quicack.fuzz.fuzz_command:add_arguments",
             "mutated copies of real captures and qlogs through pcap and qlog; counts crashes and hangs"),
    "ingest-group": ("quicack.stages.ingest_stage:add_ingest_group_arguments", "(pipeline) ingest one run group"),
    "dataset-issues": ("quicack.stages.ingest_stage:add_dataset_issues_arguments",
                       "(pipeline) dataset-level input problems"),
    "scan-part": ("quicack.scan.scan_command:add_scan_part_arguments",
                  "(pipeline) one part of a scan (a vantage point's measurements of one UTC day) to the pipeline's "
                  "Parquet parts"),
    "derive-group": ("quicack.stages.derive_stage:add_derive_group_arguments",
                     "(pipeline) the derived tables (rtt_samples, connections, ...) of one run group"),
    "build-db": ("quicack.stages.database_stage:add_build_db_arguments",
                 "(pipeline) DuckDB views over the Parquet files + summary"),
    "render-summary": ("quicack.stages.render_stage:add_render_summary_arguments",
                       "(pipeline) which artefacts could not be drawn, and why"),
    "merge-claims": ("quicack.stages.render_stage:add_merge_claims_arguments",
                     "(pipeline) every paper's claims table in one claims.csv"),
    "report-pages": ("quicack.artifact.artifact_command:add_report_pages_arguments",
                     "(pipeline) the report's landing page (claims overview) and captions"),
    "artifact-zip": ("quicack.artifact.artifact_command:add_artifact_zip_arguments",
                     "(pipeline) the report, claims, figures, tables and docs in one zip"),
    "artifact-claims": ("quicack.artifact.artifact_command:add_artifact_claims_arguments",
                        "ARTIFACT.md's claims section from a run's claims.csv"),
}  # fmt: skip


DESCRIPTION = (
    "quicack: QUIC acknowledgement analysis. Reads packet captures (+ TLS keylogs), qlogs and QUIC scanner output "
    "into Parquet tables and a DuckDB database (the Snakemake workflow runs the pipeline commands below and renders "
    "the papers' tables and figures); the user commands work on single files and query the results."
)


def _utf8_output() -> None:
    """Print UTF-8 whatever the locale, as every file is written: the logs the workflow keeps are the same bytes
    under any locale, and a table's box-drawing characters or a dash never fail to print under a Latin-1 one."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and codecs.lookup(stream.encoding).name != "utf-8":
            stream.reconfigure(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _utf8_output()
    if argv[:1] == ["--version"]:
        # The doctor's one line (it imports the engines): only that subcommand's module is imported for it.
        argv = ["doctor", "--version"]
    parser = argparse.ArgumentParser(prog="quicack", description=DESCRIPTION)
    parser.add_argument("--version", action="store_true", help="the version and the engines in use, then exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    called = next((arg for arg in argv if not arg.startswith("-")), None)
    for name, (entry, help_text) in COMMANDS.items():
        command = commands.add_parser(name, help=help_text, description=help_text)
        if name == called:
            module, _, function = entry.partition(":")
            getattr(import_module(module), function)(command)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
