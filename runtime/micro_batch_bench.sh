#!/bin/bash
# Side-by-side benchmark of the micro-batched pipeline: 4 prompts x 100 tokens
# on 1 rank, then on 2 ranks under the launcher (and optionally on 2 ranks of a
# second infer build), alternating, ROUNDS times. For every run it prints the
# generated tokens/s and the CPU, in cores, that OTHER processes used while it
# ran (/proc/stat busy time minus the run's own getrusage time): a 2-rank
# pipeline on a 2-core machine needs both cores, so rounds where others took
# CPU do not measure the design.
#
# Usage: micro_batch_bench.sh ROUNDS LAUNCH INFER MODEL [OTHER_INFER]
#   e.g. bazel build --config=opt //tools:infer //tools:launch //tools:make_toy_model
#        bazel-bin/tools/make_toy_model --out /tmp/s15m --dim 288 --layers 6 --heads 6 \
#            --kv-heads 6 --vocab 32000 --seq-len 256
#        runtime/micro_batch_bench.sh 5 bazel-bin/tools/launch bazel-bin/tools/infer /tmp/s15m
set -u
if [ $# -lt 4 ]; then
  echo "usage: $0 ROUNDS LAUNCH INFER MODEL [OTHER_INFER]" >&2
  exit 2
fi
ROUNDS=$1 LAUNCH=$2 INFER=$3 MODEL=$4 OTHER=${5:-}
PROMPTS=(--prompt-ids "1 2000 300" --prompt-ids "1 500 17" --prompt-ids "1 9000 12 45" --prompt-ids "1 77")
ARGS=(--model "$MODEL" "${PROMPTS[@]}" --max-new-tokens 100 --threads 1 --output ids)
HZ=$(getconf CLK_TCK)
ERR=$(mktemp)
trap 'rm -f "$ERR"' EXIT

busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $6 + $7 + $8}' /proc/stat; }

# measure CMD...: runs CMD; prints "TOKENS_PER_SECOND OTHERS_CORES".
measure() {
  local b0 t0 self b1 t1 rate
  b0=$(busy_ticks) t0=$(date +%s.%N)
  self=$( { TIMEFORMAT='%U %S'; time "$@" >/dev/null 2>"$ERR"; } 2>&1 | awk '{print $1 + $2}')
  b1=$(busy_ticks) t1=$(date +%s.%N)
  rate=$(grep -o 'total: [0-9.]* s ([0-9.]* generated' "$ERR" | awk '{print $4}' | tr -d '(')
  echo "${rate:-failed} $(echo "scale=2; (($b1 - $b0) / $HZ - $self) / ($t1 - $t0)" | bc)"
}

ratio() { echo "scale=2; $1 / $2" | bc 2>/dev/null || echo "?"; }

for round in $(seq "$ROUNDS"); do
  read -r one one_others < <(measure "$INFER" "${ARGS[@]}")
  read -r two two_others < <(measure "$LAUNCH" -n 2 -- "$INFER" "${ARGS[@]}")
  line="round $round, load $(cut -d' ' -f1 /proc/loadavg): 1 rank $one tok/s (others $one_others cores)"
  line+=", 2 ranks $two (others $two_others), ratio $(ratio "$two" "$one")"
  if [ -n "$OTHER" ]; then
    read -r other other_others < <(measure "$LAUNCH" -n 2 -- "$OTHER" "${ARGS[@]}")
    line+="; other build on 2 ranks $other (others $other_others), ratio $(ratio "$other" "$one")"
  fi
  echo "$line"
done
