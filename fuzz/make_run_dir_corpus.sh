#!/usr/bin/env bash
# Regenerates fuzz/corpus/run_dir from real runs of the current program (after a run format
# change, old seeds stop at the version check): a byte 0 (the harness records true checksums),
# then config.json, model.safetensors, heldout.tsv and metrics.csv joined by "\n--8<--\n".
# Usage: fuzz/make_run_dir_corpus.sh [path/to/attograd]
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:-build/examples/attograd/attograd}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'a b c\tc b a\nd e\te d\nf g h\th g f\nb c d\td c b\ne f g\tg f e\na d\td a\n' > "$tmp/pairs.tsv"
for i in 1 2 3; do cat "$tmp/pairs.tsv"; done > "$tmp/data.tsv"
"$A" train --task reverse --embed-dim 4 --steps 1 --snapshot-every 0 --out "$tmp/reverse" > /dev/null
"$A" train --data "$tmp/data.tsv" --embed-dim 4 --steps 1 --snapshot-every 0 --out "$tmp/data" > /dev/null
for run in reverse data; do
  {
    printf '\0'
    cat "$tmp/$run/config.json"; printf '\n--8<--\n'
    cat "$tmp/$run/model.safetensors"; printf '\n--8<--\n'
    [ -f "$tmp/$run/heldout.tsv" ] && cat "$tmp/$run/heldout.tsv"; printf '\n--8<--\n'
    cat "$tmp/$run/metrics.csv"
  } > "fuzz/corpus/run_dir/$run"
done
echo "wrote fuzz/corpus/run_dir/{reverse,data}"
