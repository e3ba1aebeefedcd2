#!/bin/bash
# //tools:serve with tensor parallelism (--tp 2), under //tools:launch. The
# leader alone takes requests; the last stage's other rank must admit,
# cancel, tick and end at the same steps (runtime/step_decisions.h), else
# the stage's collectives pair up wrong and the job fails:
# - on a 2 x 2 grid (pp x tp) of the toy model: a greedy completion's text
#   equals `infer --tp 2`'s on the same grid; 16 concurrent seeded streams
#   on 8 slots each equal their solo run; /metrics reports all 4 ranks'
#   compute; SIGTERM drains and the job exits 0;
# - on a 1 x 2 grid: streaming clients that disconnect cancel their
#   sequences (they are not run to max_tokens) and the server goes on
#   serving, then drains and exits 0.
#
# Usage: serve_tensor_parallel_test.sh LAUNCH SERVE INFER MAKE_TOY_MODEL CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" INFER="$3" MAKE_TOY="$4" CLIENT="$5"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_tp.XXXXXX")"
KEY="test-key-$RANDOM"
"$MAKE_TOY" --out "$WORK/toy" >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }

# --- 2 x 2
start_server grid -n 4 --timeout 300 -- --model "$WORK/toy" --tp 2 --api-key "$KEY" --slots 8 --queue 16 ||
  exit 1
PROMPT="Once upon a time"
out=$(api /v1/completions -d "{\"model\": \"toy\", \"prompt\": \"$PROMPT\", \"max_tokens\": 24, \"temperature\": 0}")
[ "$(tail -1 <<<"$out")" = 200 ] || fail "completion: status $(tail -1 <<<"$out"): $out"
served=$(sed '$d' <<<"$out" | json 'j["choices"][0]["text"]')
timeout 300 "$LAUNCH" -n 4 --timeout 240 -- "$INFER" --model "$WORK/toy" --tp 2 --prompt "$PROMPT" \
  --max-new-tokens 24 >"$WORK/infer.out" 2>"$WORK/infer.err" || fail "infer --tp 2 failed: $(cat "$WORK/infer.err")"
expected=$(python3 -c "import sys; t=open(sys.argv[1]).read(); print(t[len(sys.argv[2]):-1])" "$WORK/infer.out" "$PROMPT")
[ -n "$served" ] && [ "$served" = "$expected" ] ||
  fail "greedy completion '$served' differs from infer --tp 2's '$expected'"

python3 "$CLIENT" concurrent "$URL" "$KEY" 16 || fail "concurrent streams differ from their solo runs"

# Every rank is reported, each having computed: a stage's tensor-parallel
# peers gather their times on the stage's index 0, which the tick passes.
ranks_reported() {
  curl -s --max-time 10 "$URL/metrics" |
    awk '$1 ~ /^inferno_rank_compute_seconds_total\{rank="[0-3]"\}$/ && $2 > 0 {n++} END {exit n != 4}'
}
for _ in $(seq 200); do ranks_reported && break; sleep 0.05; done
ranks_reported || fail "/metrics does not report 4 ranks that computed: $(curl -s "$URL/metrics" | grep '^inferno_rank')"
stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "2 x 2: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"

# --- 1 x 2: disconnects cancel. A vocabulary of 4000 (the byte-level
# tokenizer's 259 and ids that print nothing): a stop id is rarely sampled,
# so a 1000-token stream (seed 9 runs to its end) runs for seconds.
"$MAKE_TOY" --out "$WORK/slow" --dim 256 --layers 4 --seq-len 1024 --vocab 4000 >/dev/null || fail "make_toy_model (slow)"
start_server pair -n 2 --timeout 300 -- --model "$WORK/slow" --tp 2 --tokenizer byte-level --model-name toy \
  --slots 2 --queue 4 || exit 1
KEY=""
long_request='{"model": "toy", "prompt": "Long", "max_tokens": 1000, "temperature": 0.8, "seed": 9, "stream": true}'
pids=()
for i in 1 2 3; do
  curl -sN --max-time 60 "$URL/v1/completions" -d "$long_request" >"$WORK/long$i.stream" &
  pids+=($!)
done
# Two run (a token came), one waits for a slot; then all three leave.
for _ in $(seq 400); do
  [ "$(cat "$WORK"/long*.stream | grep -c '^data: {')" -ge 2 ] &&
    curl -s "$URL/metrics" | grep -qx 'inferno_running_requests 2' && break
  sleep 0.05
done
kill "${pids[@]}" || fail "a stream ended before its client left"
wait "${pids[@]}" 2>/dev/null
expect_cancelled 2000
stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "1 x 2: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
