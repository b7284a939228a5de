"""What every reader of raw input shares (pcap, qlog, scan, the ingest): `limits` (the limits on input, config key
`limits:`), `compressed` (guarded decompression), `issues` (an input problem's `ingest_issues` row, and how they are
counted and summarised). This file imports nothing, so that a job depends on the modules it uses only."""
