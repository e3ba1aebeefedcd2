#!/bin/bash
# Side-by-side benchmark of speculative decoding (infer --speculate K, prompt
# lookup) on one rank: two prompts — REPEATING, one whose continuation
# repeats its context, and PLAIN, one whose continuation does not (each with
# its model) — each run without and with --speculate K, the four runs
# interleaved round by round. Prints every
# run's decode rate (infer's "decode: X tok/s": first token to the end) and
# the drafted/accepted tokens, then per prompt the medians and their ratio;
# checks that each pair's greedy ids are the same. With DRAFT=PATH (and
# PLAIN_DRAFT=PATH for the PLAIN model, default DRAFT) the runs with
# --speculate K draft from that model (--draft) instead of by prompt lookup.
#
# Usage: speculative_bench.sh ROUNDS INFER K TOKENS REPEATING_MODEL REPEATING_IDS PLAIN_MODEL PLAIN_IDS
#   e.g. bazel build -c opt //tools:infer
#        M=../shared/models/stories260K.bin
#        tools/speculative_bench.sh 5 bazel-bin/tools/infer 4 400 $M "1 403 407 261 378 431" $M "1"
#   a layer-skip draft (make_toy_model with the target's seed and fewer
#   --layers is the target's first layers; tools/llama2c_cut_layers.py cuts
#   a llama2.c file):
#        DRAFT=/tmp/target_1_layer tools/speculative_bench.sh 3 bazel-bin/tools/infer 4 300 \
#          /tmp/target "1 2 3" /tmp/target "1"
set -u
if [ $# -ne 8 ]; then
  echo "usage: $0 ROUNDS INFER K TOKENS REPEATING_MODEL REPEATING_IDS PLAIN_MODEL PLAIN_IDS" >&2
  exit 2
fi
ROUNDS=$1 INFER=$2 K=$3 TOKENS=$4 REPEATING_MODEL=$5 REPEATING=$6 PLAIN_MODEL=$7 PLAIN=$8
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

DRAFT=${DRAFT:-} PLAIN_DRAFT=${PLAIN_DRAFT:-${DRAFT:-}}

# run NAME MODEL IDS K [DRAFT]: one infer run; appends its decode rate to $WORK/NAME.rates.
run() {
  local draft=()
  [ "$4" -gt 0 ] && [ -n "${5:-}" ] && draft=(--draft "$5")
  if ! timeout 600 "$INFER" --model "$2" --prompt-ids "$3" --output ids --max-new-tokens "$TOKENS" \
      --speculate "$4" "${draft[@]}" >"$WORK/$1.ids" 2>"$WORK/$1.err"; then
    echo "$1: infer failed: $(tail -1 "$WORK/$1.err")" >&2
    exit 1
  fi
  local rate drafts
  rate=$(sed -n 's/.*decode: \([0-9.]*\) tok\/s.*/\1/p' "$WORK/$1.err")
  drafts=$(sed -n 's/^speculation: //p' "$WORK/$1.err")
  echo "$rate" >>"$WORK/$1.rates"
  echo "  $1: $rate tok/s ${drafts:+($drafts)}"
}

median() { sort -g "$WORK/$1.rates" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for round in $(seq "$ROUNDS"); do
  echo "round $round, load $(cut -d' ' -f1-3 /proc/loadavg)"
  run repeating_off "$REPEATING_MODEL" "$REPEATING" 0
  run repeating_on "$REPEATING_MODEL" "$REPEATING" "$K" "$DRAFT"
  run plain_off "$PLAIN_MODEL" "$PLAIN" 0
  run plain_on "$PLAIN_MODEL" "$PLAIN" "$K" "$PLAIN_DRAFT"
  for prompt in repeating plain; do
    cmp -s "$WORK/${prompt}_off.ids" "$WORK/${prompt}_on.ids" || echo "  $prompt: the ids differ with --speculate $K!"
  done
done
for prompt in repeating plain; do
  off=$(median "${prompt}_off") on=$(median "${prompt}_on")
  echo "$prompt: median decode $off tok/s without, $on with --speculate $K: $(echo "scale=2; $on / $off" | bc)x"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)${DRAFT:+; draft model $DRAFT}"
