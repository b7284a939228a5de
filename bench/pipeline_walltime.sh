#!/usr/bin/env bash
# Wall time and peak RSS of the default pipeline on the embedded data, in its two halves — the
# database (ingest, derive, DuckDB) and then the rendering of every table and figure — and then with
# nothing changed (which must do nothing). Results go to a temporary folder, not results/.
#   bash bench/pipeline_walltime.sh [CORES]
set -euo pipefail
cd "$(dirname "$0")/.."
cores=${1:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() {
  if ! /usr/bin/time -o "$out/time.txt" -f "%e s wall, %M KB peak RSS (largest single process)" \
    snakemake "$@" --cores "$cores" --quiet --config results_dir="$out" > "$out/snakemake.log" 2>&1; then
    tail -5 "$out/snakemake.log" >&2
    exit 1
  fi
  cat "$out/time.txt"
}
# (Assignments, not echo "$(run)", so that a failed run stops the script under set -e.)
database=$(run "$out/sample/quicack.duckdb.published")  # the database rule's declared output
echo "database, cold ($cores cores):   $database"
render=$(run all)
echo "rendering every artefact:      $render"
again=$(run all)
echo "second run, nothing changed:   $again"
echo "rows: $(grep -E '^  (runs|packets|frames) ' "$out"/sample/summary.txt | tr -s ' ' | paste -sd ';')"
echo "artefacts: $(ls "$out"/sample/figures/*.png | wc -l) figures, $(ls "$out"/sample/tables/*.csv | wc -l) tables"
