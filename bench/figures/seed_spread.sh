#!/usr/bin/env bash
# The figures for other seeds in docs/tutorials/bundled-task.md ("What the table does not
# show"): recall with its defaults on seeds 0-3, and reverse with the unscaled scores (dot,
# bilinear) on seed 1 for 1000 steps. Prints one line per run: command, steps done, held-out
# token and sequence accuracy. Deterministic for a given build and CPU (the same seed gives
# the same bits on any number of threads). Takes minutes.
#   bench/figures/seed_spread.sh [BUILD_DIR]     (default build; needs python3 for the JSON)
set -euo pipefail
build=${1:-build}
program=$build/examples/attograd/attograd
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

one() {  # one NAME TRAIN-ARGS...
    local name=$1
    shift
    "$program" train "$@" --out "$runs/$name" --quiet > /dev/null
    local steps
    steps=$(python3 -c "import json,sys; print(json.load(sys.stdin)['progress']['steps_done'])" < "$runs/$name/config.json")
    "$program" eval --run "$runs/$name" --json |
        python3 -c "import json,sys; d=json.load(sys.stdin); print('attograd train $* | %s steps | %.1f %% token, %.1f %% sequence accuracy' % ('$steps', 100 * d['token_accuracy'], 100 * d['sequence_accuracy']))"
}

for seed in 0 1 2 3; do one "recall-$seed" --task recall --seed "$seed"; done
for score in dot bilinear; do one "reverse-$score-1" --task reverse --score "$score" --seed 1 --steps 1000 --no-early-stop; done
