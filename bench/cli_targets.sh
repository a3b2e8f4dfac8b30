#!/usr/bin/env bash
# The table of docs/tutorials/bundled-task.md and docs/performance.md: trains each row's run with
# the `attograd` program (default settings, seed 0) and prints a Markdown table (command, steps,
# seconds, result). Steps and results are deterministic for a build and CPU; seconds depend on
# the machine and its load (the CPU and date of the published table are on the performance
# page). Not a test.
# The translate rows read this machine's French gettext catalogs and train for a fixed number
# of steps (no target ends them); the keyword rows are followed by their faithfulness tables,
# the induction row by its head scores, the coref row by the knockout of each head, and the
# reverse and copy rows by their saliency correlation and faithfulness verdicts.
#   bench/cli_targets.sh [BUILD_DIR [ROW...]]   (default build, every row; needs python3 for the JSON)
set -euo pipefail
build=${1:-build}
shift || true
only=("$@")  # row names to run (all when empty)
program=$build/examples/attograd/attograd
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

json_field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

echo "| command | steps | seconds | result |"
echo "| --- | --- | --- | --- |"
row() {  # row NAME METRIC(sequence|token|alignment|bleu) TRAIN-ARGS...
    local name=$1 metric=$2
    shift 2
    if [[ ${#only[@]} -gt 0 && ! " ${only[*]} " == *" $name "* ]]; then return; fi
    local dir=$runs/$name
    "$program" train "$@" --out "$dir" --quiet > /dev/null
    local steps seconds result
    steps=$(json_field "d['progress']['steps_done']" < "$dir/config.json")
    seconds=$(json_field "'%.1f' % d['progress']['seconds']" < "$dir/config.json")
    local eval_json
    eval_json=$("$program" eval --run "$dir" --json)
    case $metric in
        sequence) result=$(json_field "'%.1f %% held-out sequence accuracy' % (100 * d['sequence_accuracy'])" <<< "$eval_json") ;;
        token) result=$(json_field "'%.1f %% held-out token accuracy' % (100 * d['token_accuracy'])" <<< "$eval_json") ;;
        bleu) result=$(json_field "'corpus BLEU %.1f, %.1f %% held-out exact match' % (d['bleu'], 100 * d['sequence_accuracy'])" <<< "$eval_json") ;;
        alignment) result=$(json_field "'%.1f %% sequence accuracy, %.3f of the mass on the right alignment' % (100 * d['sequence_accuracy'], max(a['share'] for a in d['alignment']))" <<< "$eval_json") ;;
    esac
    echo "| \`attograd train $*\` | $steps | $seconds | $result |"
}

row reverse alignment --task reverse
row copy alignment --task copy
row sort token --task sort
row recall token --task recall
row dates sequence --task dates
for score in additive dot scaled-dot bilinear; do row "reverse-$score" sequence --task reverse --score "$score"; done
row copy-hard sequence --task copy --attention hard
row reverse-hard sequence --task reverse --attention hard
row copy-local-p sequence --task copy --window 4 --local p
row reverse-local-p sequence --task reverse --window 4 --local p
row coref alignment --task coref
row translate-fr bleu --task translate --lang fr --vocab shared --steps 600 --eval-every 600
row translate-fr-rnn bleu --task translate --lang fr --vocab shared --model rnn --steps 600 --eval-every 600
row translate-fr-self-attention bleu --task translate --lang fr --vocab shared --decoder-self-attention --dropout 0.1 --steps 600 --eval-every 600
row reverse-2x2 sequence --task reverse --layers 2 --heads 2
row keyword sequence --task keyword
row keyword-rnn sequence --task keyword --model rnn --bidirectional
row keyword-rnn-uniform sequence --task keyword --model rnn --bidirectional --uniform-attention 0
row keyword-end sequence --task keyword-end
row keyword-end-rnn sequence --task keyword-end --model rnn --bidirectional
row induction token --task induction
row charlm token --task charlm

# Does the attention explain the label: the faithfulness table and verdicts of each keyword run.
for run in keyword keyword-rnn keyword-rnn-uniform keyword-end keyword-end-rnn; do
    if [[ -d $runs/$run ]]; then
        echo
        echo "faithfulness of $run (200 held-out examples):"
        "$program" inspect --run "$runs/$run" --faithfulness --samples 200 --format term | sed "s/^/- $run: /"
    fi
done

# The induction run's heads: previous-token and induction scores per head.
if [[ -d $runs/induction ]]; then
    echo
    "$program" inspect --run "$runs/induction" --format term | grep -E 'previous-token .*induction' | sed 's/^/- induction: /'
fi

# Which head resolves "it": held-out accuracy with each attention head of the coref run knocked
# out, then the faithfulness verdicts of its heads (50 held-out examples).
if [[ -d $runs/coref ]]; then
    echo
    layers=$(json_field "d['model']['layers'] + d['model']['decoder_layers']" < "$runs/coref/config.json")
    heads=$(json_field "d['model']['heads']" < "$runs/coref/config.json")
    for ((l = 0; l < layers; l++)); do
        for ((h = 0; h < heads; h++)); do
            "$program" inspect --run "$runs/coref" --knockout "$l.$h" --samples 1 --format term |
                grep '^knockout of' | sed 's/^/- coref: /'
        done
    done
    "$program" inspect --run "$runs/coref" --faithfulness --format term | grep ': decisive\|: not an\|: partial\|needs .* most' |
        sed 's/^/- coref: /'
fi

# The reverse and copy runs: the saliency correlation of the demo's input (reverse) and each
# run's faithfulness verdicts (50 held-out examples, the program's default), also of reverse
# with 2 layers of 2 heads.
if [[ -d $runs/reverse ]]; then
    echo
    "$program" inspect --run "$runs/reverse" --input "a b c d e f g" --saliency --format term |
        grep 'Spearman' | sed 's/^/- reverse: /'
fi
for run in reverse copy reverse-2x2; do
    if [[ -d $runs/$run ]]; then
        "$program" inspect --run "$runs/$run" --faithfulness --format term | grep ': decisive\|: not an\|: partial' |
            sed "s/^/- $run: /"
    fi
done
