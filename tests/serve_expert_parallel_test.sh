#!/bin/bash
# //tools:serve with expert parallelism (--ep 2), under //tools:launch, on a
# Qwen3-MoE toy (4 experts, 2 per token):
# - a greedy completion's text equals one rank's (`infer` alone); 8
#   concurrent seeded streams on 4 slots each equal their solo run;
#   /metrics reports the routing histogram (every layer's counts sum to
#   num_experts_per_tok times the positions run, the same in each layer);
# - with --experts-by-load (infer --routing-stats of one rank, experts 0 and
#   1 made hot, so they go to different ranks): the same greedy text; and
#   with --expert-replicas 1 on top (each rank a copy of the other's hottest
#   expert): the same greedy text, and concurrent streams equal their solo
#   runs;
# - SIGTERM drains and each job exits 0.
#
# Usage: serve_expert_parallel_test.sh LAUNCH SERVE INFER MAKE_TOY_MODEL CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" INFER="$3" MAKE_TOY="$4" CLIENT="$5"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_ep.XXXXXX")"
KEY="test-key-$RANDOM"
"$MAKE_TOY" --out "$WORK/moe" --dim 64 --heads 8 --kv-heads 2 --layers 2 --architecture qwen3_moe --experts 4 \
  --experts-per-token 2 --expert-hidden 32 --norm-topk-prob >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
PROMPT="Once upon a time"

# One rank's greedy text, and its routing stats with experts 0 and 1 made hot.
"$INFER" --model "$WORK/moe" --prompt "$PROMPT" --max-new-tokens 24 --routing-stats "$WORK/stats.json" \
  >"$WORK/infer.out" 2>"$WORK/infer.err" || { echo "FAIL: infer: $(cat "$WORK/infer.err")" >&2; exit 1; }
expected=$(python3 -c "import sys; t=open(sys.argv[1]).read(); print(t[len(sys.argv[2]):-1])" "$WORK/infer.out" "$PROMPT")
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
s["counts"] = [[c * 10 + 100 if e < 2 else c for e, c in enumerate(row)] for row in s["counts"]]
json.dump(s, open(sys.argv[2], "w"))' "$WORK/stats.json" "$WORK/hot.json" || fail "routing stats: $(cat "$WORK/stats.json")"

# greedy_equals NAME: a greedy completion's text equals one rank's.
greedy_equals() {
  local out served
  out=$(api /v1/completions -d "{\"model\": \"toy\", \"prompt\": \"$PROMPT\", \"max_tokens\": 24, \"temperature\": 0}")
  [ "$(tail -1 <<<"$out")" = 200 ] || { fail "$1: completion: status $(tail -1 <<<"$out"): $out"; return; }
  served=$(sed '$d' <<<"$out" | json 'j["choices"][0]["text"]')
  [ -n "$served" ] && [ "$served" = "$expected" ] ||
    fail "$1: greedy completion '$served' differs from one rank's '$expected'"
}

# The routing histogram on /metrics: each layer's counts sum to the same
# multiple of 2 (experts per token), not 0.
routing_reported() {
  curl -s --max-time 10 "$URL/metrics" | awk -F'[{}",= ]+' '
    $1 == "inferno_expert_routed_positions_total" {sum[$3] += $NF}
    END {
      n = 0
      for (layer in sum) { n++; if (sum[layer] == 0 || sum[layer] % 2 || (n > 1 && sum[layer] != last)) exit 1; last = sum[layer] }
      exit n != 2
    }'
}

start_server ep2 -n 2 --timeout 300 -- --model "$WORK/moe" --ep 2 --model-name toy \
  --api-key "$KEY" --slots 4 --queue 16 || exit 1
greedy_equals ep2
python3 "$CLIENT" concurrent "$URL" "$KEY" 8 || fail "ep2: concurrent streams differ from their solo runs"
for _ in $(seq 200); do routing_reported && break; sleep 0.05; done
routing_reported ||
  fail "/metrics has no routing histogram of both layers: $(curl -s "$URL/metrics" | grep '^inferno_expert')"
stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "ep2: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"

start_server by_load -n 2 --timeout 300 -- --model "$WORK/moe" --ep 2 --experts-by-load "$WORK/hot.json" \
  --model-name toy --api-key "$KEY" --slots 4 || exit 1
greedy_equals by_load
stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "by_load: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"

start_server replicas -n 2 --timeout 300 -- --model "$WORK/moe" --ep 2 --experts-by-load "$WORK/hot.json" \
  --expert-replicas 1 --model-name toy --api-key "$KEY" --slots 4 --queue 16 || exit 1
greedy_equals replicas
python3 "$CLIENT" concurrent "$URL" "$KEY" 8 || fail "replicas: concurrent streams differ from their solo runs"
stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "replicas: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"

# --expert-replicas needs --ep: one line before any rank starts.
if timeout 30 "$SERVE" --model "$WORK/moe" --expert-replicas 1 --listen 127.0.0.1:0 >/dev/null 2>"$WORK/no_ep_replicas.err"; then
  fail "serve --expert-replicas without --ep accepted"
fi
grep -q "expert-replicas copies experts under expert parallelism; add --ep" "$WORK/no_ep_replicas.err" ||
  fail "no --ep for replicas: $(cat "$WORK/no_ep_replicas.err")"

# --experts-by-load needs --ep: one line before any rank starts.
if timeout 30 "$SERVE" --model "$WORK/moe" --experts-by-load "$WORK/hot.json" --listen 127.0.0.1:0 >/dev/null 2>"$WORK/no_ep.err"; then
  fail "serve --experts-by-load without --ep accepted"
fi
grep -q "experts-by-load places experts under expert parallelism; add --ep" "$WORK/no_ep.err" ||
  fail "no --ep: $(cat "$WORK/no_ep.err")"

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
