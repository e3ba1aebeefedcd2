#!/bin/bash
# Side-by-side benchmark of tensor parallelism (issue 12): decode tokens/s of
# one sequence on one rank with 1 thread, one rank with --threads 2, TP2 (2
# ranks x 1 thread, --tp 2) and PP2 (2 ranks x 1 thread), alternating,
# ROUNDS times; then four prompts (generated tokens/s) on one rank with
# --threads 2, TP2 and PP2. Every run prints the CPU, in cores, that OTHER
# processes used while it ran (/proc/stat busy time minus the run's own
# getrusage time): two ranks on a 2-core machine need both cores, so rounds
# where others took CPU do not measure the design. The transport is whatever
# the job picks by default.
#
# Usage: tensor_parallel_bench.sh ROUNDS LAUNCH INFER MODEL [TOKENS]
#   e.g. bazel build --config=opt //tools:infer //tools:launch //tools:make_toy_model
#        bazel-bin/tools/make_toy_model --out /tmp/m110 --dim 768 --layers 12 --heads 12 \
#            --kv-heads 12 --vocab 32000 --seq-len 512
#        runtime/tensor_parallel_bench.sh 5 bazel-bin/tools/launch bazel-bin/tools/infer /tmp/m110
set -u
if [ $# -lt 4 ]; then
  echo "usage: $0 ROUNDS LAUNCH INFER MODEL [TOKENS]" >&2
  exit 2
fi
ROUNDS=$1 LAUNCH=$2 INFER=$3 MODEL=$4 TOKENS=${5:-200}
ONE=(--prompt-ids "1 2000 300")
FOUR=(--prompt-ids "1 2000 300" --prompt-ids "1 500 17" --prompt-ids "1 9000 12 45" --prompt-ids "1 77")
HZ=$(getconf CLK_TCK)
ERR=$(mktemp)
trap 'rm -f "$ERR"' EXIT

busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $6 + $7 + $8}' /proc/stat; }

# measure FIELD WORLD ARGS...: runs infer on WORLD ranks; prints
# "TOKENS_PER_SECOND OTHERS_CORES", the rate being the stats line's decode
# rate (FIELD decode) or generated rate (FIELD total).
measure() {
  local field=$1 world=$2 b0 t0 self b1 t1 rate
  shift 2
  b0=$(busy_ticks) t0=$(date +%s.%N)
  self=$( { TIMEFORMAT='%U %S'; time "$LAUNCH" -n "$world" -- "$INFER" --model "$MODEL" --output ids \
    --max-new-tokens "$TOKENS" "$@" >/dev/null 2>"$ERR"; } 2>&1 | awk '{print $1 + $2}')
  b1=$(busy_ticks) t1=$(date +%s.%N)
  if [ "$field" = decode ]; then
    rate=$(grep -o 'decode: [0-9.]* tok/s' "$ERR" | awk '{print $2}')
  else
    rate=$(grep -o 'total: [0-9.]* s ([0-9.]* generated' "$ERR" | awk '{print $4}' | tr -d '(')
  fi
  echo "${rate:-failed} $(echo "scale=2; (($b1 - $b0) / $HZ - $self) / ($t1 - $t0)" | bc)"
}

ratio() { echo "scale=2; $1 / $2" | bc 2>/dev/null || echo "?"; }

echo "one sequence, $TOKENS tokens, decode tok/s (others' cores in parentheses)"
echo "round | 1 rank x 1 thread | 1 rank x 2 threads | TP2 | PP2 | TP2/1t | TP2/2t"
for ((round = 1; round <= ROUNDS; round++)); do
  read -r one one_o < <(measure decode 1 "${ONE[@]}" --threads 1)
  read -r two two_o < <(measure decode 1 "${ONE[@]}" --threads 2)
  read -r tp tp_o < <(measure decode 2 "${ONE[@]}" --tp 2)
  read -r pp pp_o < <(measure decode 2 "${ONE[@]}")
  echo "$round | $one ($one_o) | $two ($two_o) | $tp ($tp_o) | $pp ($pp_o) | $(ratio "$tp" "$one") | $(ratio "$tp" "$two")"
done

echo "four prompts x $TOKENS tokens, generated tok/s (others' cores in parentheses)"
echo "round | 1 rank x 2 threads | TP2 | PP2"
for ((round = 1; round <= ROUNDS; round++)); do
  read -r two two_o < <(measure total 1 "${FOUR[@]}" --threads 2)
  read -r tp tp_o < <(measure total 2 "${FOUR[@]}" --tp 2)
  read -r pp pp_o < <(measure total 2 "${FOUR[@]}")
  echo "$round | $two ($two_o) | $tp ($tp_o) | $pp ($pp_o)"
done
