#!/usr/bin/env bash
# The README's picture: trains the demo's run (`reverse`, seed 0), writes its HTML report and
# takes a headless-Chromium screenshot of it into docs/images/report.png.
#   tools/docs/screenshot_report.sh [build/examples/attograd/attograd]
set -euo pipefail
cd "$(dirname "$0")/../.."
program=$(realpath "${1:-build/examples/attograd/attograd}")
repo=$PWD
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"  # the report titles the run by the path given: runs/reverse, as after `make demo`
OMP_NUM_THREADS=1 "$program" train --task reverse --seed 0 --out runs/reverse > /dev/null
"$program" inspect --run runs/reverse --samples 3 --format html --to "$scratch/report.html" > /dev/null
root_flags=()
[ "$(id -u)" = 0 ] && root_flags=(--no-sandbox)
timeout 120 chromium --headless "${root_flags[@]}" --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$scratch/profile" \
  --hide-scrollbars --window-size=1280,860 --virtual-time-budget=5000 \
  --screenshot="$scratch/report.png" "file://$scratch/report.html" 2> /dev/null
mkdir -p "$repo/docs/images"
cp "$scratch/report.png" "$repo/docs/images/report.png"
echo "wrote docs/images/report.png"
