"""The raw-data layouts quicack reads and its testbed writes: one home for every path rule.

* ``vantage`` — the names of observation points (``client``, ``server``, ``sim_left``, ``sim_right``) and
  how a file's path names them;
* ``runs`` — the QUIC Interop Runner (QIR) layout ``<raw>/<server>_<client>/<testcase>/<repetition>/``:
  run groups, run folders, and where a run keeps its keylogs, qlogs and captures;
* ``naming`` — what folder names say about a run: quicack's test-case names
  (``<scenario>-<mode>-rtt<rtt>ms-<file>-<app>``) and the imc24 artifact's ``logs_<k=v,...>_<time>`` folders;
* ``scan_folders`` — the scanner layout of the imc24 authors ``<root>/<vantage_point>/data/<ISO timestamp>/…``
  (QScanner's CSVs, the capture, targets): measurement folders, their times and files.

Ingest, the qlog reader, the capture decoder, the scan reader, the Snakemake rules and the testbed all take
these rules from here, so that the analysis never depends on the recorder.
"""

from typing import TYPE_CHECKING

from quicack.lazy_names import lazy_names

# Each name from its module, imported on first use (PEP 562): the capture decoder needs only `capture_point`, and
# importing every module (naming, runs, scan_folders: datetime, urllib) cost a small capture's decoding a few ms.
_MODULES = {
    "naming": ("PAPER_CONDITIONS_SUFFIX", "PAPER_STACK_SUFFIX", "RunLocation", "ack_policy_label", "file_size_bytes",
               "parse_imc24_folder_name", "parse_run_folder", "sender_label", "testcase_name"),
    "runs": ("RUN_JSON", "LeftOut", "RunFolder", "capture_files", "discover_runs", "group_from_key", "group_key",
             "group_tree", "is_qlog_name", "keylog_files", "leaves_raw", "qlog_files", "raw_entries", "run_groups"),
    "scan_folders": ("MeasurementFolder", "MeasurementTime", "find_measurements", "parse_measurement_time"),
    "vantage": ("CLIENT", "SERVER", "SIM_LEFT", "SIM_RIGHT", "capture_point", "endpoint_from_path"),
}  # fmt: skip
__getattr__ = lazy_names(__name__, _MODULES)

if TYPE_CHECKING:  # the same names for the type checker (quicack.jobs.code_graph does not follow these imports)
    from quicack.layout.naming import (
        PAPER_CONDITIONS_SUFFIX,
        PAPER_STACK_SUFFIX,
        RunLocation,
        ack_policy_label,
        file_size_bytes,
        parse_imc24_folder_name,
        parse_run_folder,
        sender_label,
        testcase_name,
    )
    from quicack.layout.runs import (
        RUN_JSON,
        LeftOut,
        RunFolder,
        capture_files,
        discover_runs,
        group_from_key,
        group_key,
        group_tree,
        is_qlog_name,
        keylog_files,
        leaves_raw,
        qlog_files,
        raw_entries,
        run_groups,
    )
    from quicack.layout.scan_folders import (
        MeasurementFolder,
        MeasurementTime,
        find_measurements,
        parse_measurement_time,
    )
    from quicack.layout.vantage import CLIENT, SERVER, SIM_LEFT, SIM_RIGHT, capture_point, endpoint_from_path


__all__ = [
    "PAPER_CONDITIONS_SUFFIX",
    "PAPER_STACK_SUFFIX",
    "ack_policy_label",
    "sender_label",
    "CLIENT",
    "RUN_JSON",
    "MeasurementFolder",
    "MeasurementTime",
    "SERVER",
    "SIM_LEFT",
    "SIM_RIGHT",
    "LeftOut",
    "RunFolder",
    "RunLocation",
    "capture_files",
    "capture_point",
    "discover_runs",
    "endpoint_from_path",
    "file_size_bytes",
    "find_measurements",
    "group_from_key",
    "group_key",
    "group_tree",
    "is_qlog_name",
    "keylog_files",
    "leaves_raw",
    "parse_imc24_folder_name",
    "parse_measurement_time",
    "parse_run_folder",
    "qlog_files",
    "raw_entries",
    "run_groups",
    "testcase_name",
]
