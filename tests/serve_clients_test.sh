#!/bin/bash
# //tools:serve on 2 ranks (toy model, under //tools:launch) with clients
# that misbehave, while others are served:
# - a non-streaming client that disconnects mid-request cancels its sequence:
#   /metrics counts it as 499, its slot frees at once (running requests back
#   to 0, far fewer tokens generated than it asked for), and a seeded request
#   running beside it answers exactly as it does alone;
# - clients that send a byte a second (slowloris), from the request line or
#   from the headers on, are disconnected within the read deadline (plus
#   slack), the latter answered 408, while normal requests succeed
#   (serve_client.py slow).
#
# Usage: serve_clients_test.sh LAUNCH SERVE MAKE_TOY_MODEL CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" CLIENT="$4"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_clients.XXXXXX")"
KEY=""
DEADLINE_MS=2000
# A vocabulary of 4000 (the byte-level tokenizer's 259 and ids that print
# nothing): a stop id is rarely sampled, so a 1000-token request runs for
# seconds (this one, seed 9, runs to its end).
"$MAKE_TOY" --out "$WORK/toy" --dim 256 --layers 4 --seq-len 1024 --vocab 4000 >/dev/null ||
  { echo "FAIL: make_toy_model" >&2; exit 1; }
start_server clients -n 2 --timeout 300 -- --model "$WORK/toy" --tokenizer byte-level --model-name toy \
  --slots 2 --queue 4 --read-deadline-ms "$DEADLINE_MS" || exit 1

# metric NAME_AND_LABELS: its value in /metrics (empty when absent).
metric() { curl -s --max-time 10 "$URL/metrics" | awk -v name="$1" '$1 == name {print $2}'; }

# --- a non-streaming client leaves mid-request
beside='{"model": "toy", "prompt": "Beside", "max_tokens": 200, "temperature": 0.8, "seed": 4}'
alone=$(api /v1/completions -d "$beside")
[ "$(tail -1 <<<"$alone")" = 200 ] || fail "the seeded request alone: $alone"
generated_before=$(metric inferno_generated_tokens_total)
curl -s --max-time 60 "$URL/v1/completions" \
  -d '{"model": "toy", "prompt": "Long", "max_tokens": 1000, "temperature": 0.8, "seed": 9}' >/dev/null &
leaver=$!
api /v1/completions -d "$beside" >"$WORK/beside.out" &
beside_pid=$!
# Until both run and tokens flow, then the first client leaves.
for _ in $(seq 400); do
  [ "$(metric inferno_running_requests)" = 2 ] &&
    [ "$(metric inferno_generated_tokens_total)" -gt "$generated_before" ] && break
  sleep 0.05
done
kill "$leaver" || fail "the long request ended before its client left"
wait "$leaver" 2>/dev/null
left_at=$(now_ms)
cancelled=""
for _ in $(seq 200); do
  cancelled=$(metric 'inferno_requests_total{endpoint="/v1/completions",status="499"}')
  [ -n "$cancelled" ] && break
  sleep 0.05
done
noticed_ms=$(($(now_ms) - left_at))
[ "$cancelled" = 1 ] || fail "/metrics counts ${cancelled:-no} request(s) with status 499, not 1"
wait "$beside_pid"
answer() { sed '$d' | json '[j["choices"], j["usage"]]'; }
[ "$(answer <"$WORK/beside.out")" = "$(answer <<<"$alone")" ] ||
  fail "the request beside the one that left: $(cat "$WORK/beside.out"), alone: $alone"
for _ in $(seq 200); do
  [ "$(metric inferno_running_requests)" = 0 ] && break
  sleep 0.05
done
[ "$(metric inferno_running_requests)" = 0 ] || fail "the request whose client left still runs 10 s later"
generated=$(($(metric inferno_generated_tokens_total) - generated_before))
# 200 for the request beside it, 1000 had the one that left run to its end.
[ "$generated" -lt 1200 ] || fail "the request whose client left was not cancelled: $generated tokens generated"
out=$(api /v1/completions -d '{"model": "toy", "prompt": "After", "max_tokens": 5}')
[ "$(tail -1 <<<"$out")" = 200 ] || fail "a request after the client left: $out"
echo "a client left: seen (499 in /metrics) within $noticed_ms ms; $generated tokens generated in all"

# --- slow clients are dropped, others served
python3 "$CLIENT" slow "$URL" "$KEY" 6 "$DEADLINE_MS" || fail "slow clients"
[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$URL/health")" = 200 ] || fail "/health after slow clients"

stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"
rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
