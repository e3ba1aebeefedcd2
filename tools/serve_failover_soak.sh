#!/bin/bash
# Failover soak (not a test): tests/serve_failover_test.sh ROUNDS times, each
# with the victim (rank 1 or 2) and the moment of the SIGKILL (after 16 to
# 700 of the 8 streams' 960 chunks) chosen at random, over the stories15M
# shape (dim 288, 6 layers, 6 heads, vocab 32000, context 512; random
# weights; llama2.c's tokenizer.bin from ../shared/models when present, else
# byte-level). Each round compares its 8 streams with an undisturbed run of
# its own, and checks that nothing is left running or in /dev/shm. Prints
# each round's line, then how many passed and the median and largest time
# from the kill to every stream's next chunk.
#
#   bazel build --config=opt //tools:launch //tools:serve //tools:make_toy_model
#   tools/serve_failover_soak.sh bazel-bin/tools [ROUNDS]
set -u
BIN="$(readlink -f "$1")" ROUNDS="${2:-20}"
cd "$(dirname "$(readlink -f "$0")")/.." || exit 1
TOKENIZER="$(pwd)/../shared/models/tokenizer.bin"
[ -f "$TOKENIZER" ] || TOKENIZER=byte-level
export SIGNALS=KILL TOKENIZER TOY_FLAGS="--dim 288 --layers 6 --heads 6 --kv-heads 6 --vocab 32000 --seq-len 512"
LOG="$(mktemp)" RESULTS="$(mktemp)"
passed=0
for round in $(seq "$ROUNDS"); do
  victim=$((1 + RANDOM % 2)) kill_after=$((16 + RANDOM % 685))
  if VICTIM=$victim KILL_AFTER=$kill_after tests/serve_failover_test.sh "$BIN/launch" "$BIN/serve" \
    "$BIN/make_toy_model" tests/serve_failover_client.py >"$LOG" 2>&1; then
    passed=$((passed + 1))
    echo "round $round: victim $victim after $kill_after chunks: $(grep '^failover:' "$LOG")" | tee -a "$RESULTS"
  else
    echo "round $round: victim $victim after $kill_after chunks: FAILED"
    tail -20 "$LOG"
  fi
done
rm -f "$LOG"
echo "$passed/$ROUNDS rounds passed (uptime: $(uptime))"
sed -n "s/.*to every stream's next chunk \([0-9]*\) ms.*/\1/p" "$RESULTS" | sort -n |
  awk '{ v[NR] = $1 } END { if (NR) printf "kill to every stream'"'"'s next chunk: median %d ms, largest %d ms (n=%d)\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR], NR }'
rm -f "$RESULTS"
