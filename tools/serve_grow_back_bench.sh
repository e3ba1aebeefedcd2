#!/bin/bash
# Grow-back benchmark (not a test; tests/serve_grow_back_test.sh checks the
# streams): ROUNDS rounds, each one job of 3 ranks (serve --failover, three
# pipeline stages, no standby) over the stories15M shape (dim 288, 6 layers,
# 6 heads, vocab 32000, context 512; random weights; llama2.c's
# tokenizer.bin from ../shared/models when present, else byte-level). In
# each round, in this order: the decode rate on 3 ranks; SIGKILL of rank 2
# and the rate on the 2 left; a replacement (launch --join) and the time
# from its start to the 3-rank generation formed (rank 0's log line); the
# rate on 3 ranks again. A rate: 8 greedy streams of MAX_TOKENS (120 unless
# set), all streams' chunks per second from every stream's first chunk
# until three quarters of the chunks have arrived
# (tests/serve_failover_client.py's window). Prints each round, then the
# medians and the load.
#
#   bazel build --config=opt //tools:launch //tools:serve //tools:make_toy_model
#   tools/serve_grow_back_bench.sh bazel-bin/tools [ROUNDS]
set -u
BIN="$(readlink -f "$1")" ROUNDS="${2:-5}"
cd "$(dirname "$(readlink -f "$0")")/.." || exit 1
source tests/test_lib.sh
LAUNCH="$BIN/launch" SERVE="$BIN/serve" CLIENT=tests/serve_failover_client.py
source tests/serve_lib.sh
WORK="$(mktemp -d)"
TOKENIZER="$(pwd)/../shared/models/tokenizer.bin"
[ -f "$TOKENIZER" ] || TOKENIZER=byte-level
MAX_TOKENS=${MAX_TOKENS:-120}
export INFERNO_TIMEOUT_MS=5000
"$BIN/make_toy_model" --out "$WORK/toy" --dim 288 --layers 6 --heads 6 --kv-heads 6 --vocab 32000 \
  --seq-len 512 >/dev/null || exit 1
# THREADS: every process's --threads (default 1: the job's 3 ranks share
# the host's CPUs, and a replacement launched alone would take them all).
SERVE_ARGS=(--failover --model "$WORK/toy" --tokenizer "$TOKENIZER" --model-name toy --slots 8 --threads "${THREADS:-1}")
export INFERNO_JOB_SECRET="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
RESULTS="$WORK/results"

# rate: the decode rate of 8 fresh streams on the job at $URL.
rate() {
  python3 "$CLIENT" "$URL" 8 "$MAX_TOKENS" 1 $((6 * MAX_TOKENS)) NONE |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["chunks_per_s_before_kill"])'
}

# wait_for_line FILE PATTERN: whether FILE gets a line matching PATTERN within 60 s.
wait_for_line() {
  local deadline=$(($(now_ms) + 60000))
  while [ "$(now_ms)" -lt "$deadline" ]; do
    grep -q "$2" "$1" && return 0
    sleep 0.02
  done
  return 1
}

for round in $(seq "$ROUNDS"); do
  start_server "round$round" -n 3 --failover --timeout 300 --grace 2 -- "${SERVE_ARGS[@]}" || exit 1
  rank0=$(rank_pid "$SERVER_PID" 0)
  port=$(tr '\0' '\n' <"/proc/$rank0/environ" | sed -n 's/^MASTER_PORT=//p')
  whole=$(rate)
  kill -KILL "$(rank_pid "$SERVER_PID" 2)"
  wait_for_line "$SERVER_OUT" "generation 1 formed over 2 ranks" || { echo "round $round: no failover"; exit 1; }
  smaller=$(rate)
  started=$(now_ms)
  "$LAUNCH" --join "127.0.0.1:$port" --timeout 300 -- "$SERVE" --listen 127.0.0.1:0 "${SERVE_ARGS[@]}" \
    >"$WORK/join$round.out" 2>&1 &
  join_pid=$!
  wait_for_line "$SERVER_OUT" "generation 2 formed over 3 ranks" || { echo "round $round: no grow-back"; exit 1; }
  joined=$(($(now_ms) - started))
  grown=$(rate)
  stop_server
  wait "$join_pid"
  echo "round $round: chunks/s on 3 ranks $whole, on 2 after the kill $smaller, on 3 after the grow-back $grown;" \
    "replacement start to the 3-rank generation $joined ms (exit: job $SERVER_STATUS, replacement $?)" |
    tee -a "$RESULTS"
done
median() {
  sed -n "s/.*$1.*/\1/p" "$RESULTS" | sort -g |
    awk '{ v[NR] = $1 } END { printf "%g (n=%d, %g-%g)", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), NR, v[1], v[NR] }'
}
echo "medians: chunks/s on 3 ranks $(median 'on 3 ranks \([0-9.]*\),'), on 2 $(median 'on 2 after the kill \([0-9.]*\),')," \
  "on 3 after the grow-back $(median 'after the grow-back \([0-9.]*\);'); replacement start to the 3-rank generation" \
  "$(median 'generation \([0-9]*\) ms') ms (uptime: $(uptime))"
rm -rf "$WORK"
