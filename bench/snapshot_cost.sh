#!/usr/bin/env bash
# What attention snapshots cost whole `attograd train` runs: trains reverse, sort and dates
# (fixed step counts, no early stop) with --snapshot-every 0 and with the default (20), in
# alternating order, ROUNDS times each, and prints a Markdown table of the median CPU seconds
# (user + sys: the machine is shared, wall time counts other processes' slices), median wall
# seconds, the cost (the median over rounds of each round's CPU ratio, so that a slow spell hits
# both runs of a round alike) and the snapshot file's size. Not a test; bench_snapshot_cost
# times a snapshot against a training step directly, which resolves far smaller costs.
#   bench/snapshot_cost.sh [BUILD_DIR] [ROUNDS]     (default build 9; needs python3)
set -euo pipefail
build=${1:-build}
rounds=${2:-9}
program=$build/examples/attograd/attograd
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
export OMP_NUM_THREADS=1  # one thread: CPU time is then the work done, not spinning

tasks=("reverse --steps 300" "sort --steps 500" "dates --steps 300")
variants=("0" "default")
results=$runs/results.tsv
for ((round = 0; round < rounds; ++round)); do
    for task in "${tasks[@]}"; do
        name=${task%% *}
        # Rotate the order every round, so that no variant always runs first or last.
        for ((k = 0; k < ${#variants[@]}; ++k)); do
            variant=${variants[$(((k + round) % ${#variants[@]}))]}
            dir=$runs/$name-$variant
            rm -rf "$dir"
            option=()
            [[ $variant != default ]] && option=(--snapshot-every "$variant")
            # shellcheck disable=SC2086
            /usr/bin/time -f "%U %S %e" -o "$runs/time" \
                "$program" train --task $task --no-early-stop --quiet "${option[@]}" --out "$dir" > /dev/null
            read -r user sys wall < "$runs/time"
            size=0
            [[ -f $dir/attention_snapshots.safetensors ]] && size=$(stat -c %s "$dir/attention_snapshots.safetensors")
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$variant" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$wall" "$size" >> "$results"
        done
    done
done

python3 - "$results" "$rounds" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
by_round = {}
for line in open(sys.argv[1]):
    round_, name, variant, cpu, wall, size = line.split("\t")
    rows[name, variant].append((float(cpu), float(wall), int(size)))
    by_round[round_, name, variant] = float(cpu)
print(f"medians of {sys.argv[2]} alternating rounds")
print("| task | --snapshot-every | CPU s | wall s | CPU cost | file |")
print("| --- | --- | --- | --- | --- | --- |")
for name in dict.fromkeys(n for n, _ in rows):
    for variant in ("0", "default"):
        r = rows[name, variant]
        cpu = statistics.median(x[0] for x in r)
        wall = statistics.median(x[1] for x in r)
        ratios = [by_round[r, name, variant] / by_round[r, name, "0"] for r, n, v in by_round if n == name and v == "0"]
        cost = "" if variant == "0" else f"{100 * (statistics.median(ratios) - 1):+.1f} %"
        size = r[0][2]
        print(f"| {name} | {variant} | {cpu:.2f} | {wall:.2f} | {cost} | {size / 1024:.0f} KiB |" if size else
              f"| {name} | {variant} | {cpu:.2f} | {wall:.2f} | {cost} | none |")
EOF
