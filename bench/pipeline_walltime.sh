#!/usr/bin/env bash
# Wall time and peak RSS of the default pipeline on the embedded data, cold and then with
# nothing changed (which must do nothing). Results go to a temporary folder, not results/.
#   bash bench/pipeline_walltime.sh [CORES]
set -euo pipefail
cd "$(dirname "$0")/.."
cores=${1:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() {
  if ! /usr/bin/time -o "$out/time.txt" -f "%e s wall, %M KB peak RSS (largest single process)" \
    snakemake --cores "$cores" --quiet all --config results_dir="$out" > "$out/snakemake.log" 2>&1; then
    tail -5 "$out/snakemake.log" >&2
    exit 1
  fi
  cat "$out/time.txt"
}
echo "cold run ($cores cores):      $(run)"
echo "second run, nothing changed: $(run)"
echo "rows: $(grep -E '^  (runs|packets|frames) ' "$out"/sample/summary.txt | tr -s ' ' | paste -sd ';')"
