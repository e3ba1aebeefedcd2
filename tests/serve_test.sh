#!/bin/bash
# //tools:serve on a 2-rank pipeline (toy model, under //tools:launch), with
# real clients (curl, and Python's http.client for concurrent streams):
# - completions and chat completions, JSON and streamed (server-sent events
#   ending with [DONE]); a greedy completion's text equals //tools:infer's for
#   the same prompt, and the streamed text equals the JSON one;
# - continuous batching: 16 concurrent seeded streams on 8 slots each equal
#   their solo run (serve_client.py concurrent), and rank 0's descriptors
#   and memory come back;
# - bad input: malformed JSON, wrong types, unknown fields and model, a
#   prompt longer than the context, an oversized body, a missing API key and
#   an unknown path each get their 4xx and an OpenAI error object (slow
#   clients and non-streaming disconnects: serve_clients_test.sh);
# - /health, /v1/models and /metrics, which reports every rank's compute
#   and wait seconds;
# - with one slot and a queue of one: a third request gets 429, and a
#   streaming client that disconnects frees the slot (its sequence is
#   cancelled, not run to max_tokens); with --max-connections 3 taken, one
#   more connection gets 503 at once, and /metrics counts it;
# - SIGTERM to rank 0 drains: a stream in flight when the signal lands
#   (seen running in /metrics once /health says "draining") runs to its
#   end and [DONE], and the job exits 0.
#
# Usage: serve_test.sh LAUNCH SERVE INFER MAKE_TOY_MODEL CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" INFER="$3" MAKE_TOY="$4" CLIENT="$5"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve.XXXXXX")"
KEY="test-key-$RANDOM"
"$MAKE_TOY" --out "$WORK/toy" >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
cat >"$WORK/chat.jinja" <<'TEMPLATE'
{% for m in messages %}<{{ m.role }}>{{ m.content }}
{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}
TEMPLATE

start_server main -n 2 --timeout 300 -- --model "$WORK/toy" --api-key "$KEY" --chat-template "$WORK/chat.jinja" \
  --max-body-bytes 4096 --slots 8 --queue 16 || exit 1

# --- completions and chat, JSON and streamed
PROMPT="Once upon a time"
out=$(api /v1/completions -d "{\"model\": \"toy\", \"prompt\": \"$PROMPT\", \"max_tokens\": 24, \"temperature\": 0}")
[ "$(tail -1 <<<"$out")" = 200 ] || fail "completion: status $(tail -1 <<<"$out"): $out"
body=$(sed '$d' <<<"$out")
served=$(json 'j["choices"][0]["text"]' <<<"$body")
"$INFER" --model "$WORK/toy" --prompt "$PROMPT" --max-new-tokens 24 >"$WORK/infer.out" 2>"$WORK/infer.err" ||
  fail "infer failed: $(cat "$WORK/infer.err")"
expected=$(python3 -c "import sys; t=open(sys.argv[1]).read(); print(t[len(sys.argv[2]):-1])" "$WORK/infer.out" "$PROMPT")
[ "$served" = "$expected" ] || fail "greedy completion '$served' differs from infer's '$expected'"
[ "$(json 'j["object"], j["model"], j["usage"]["prompt_tokens"], j["usage"]["completion_tokens"] + j["usage"]["prompt_tokens"] == j["usage"]["total_tokens"]' <<<"$body")" = "text_completion toy 17 True" ] ||
  fail "completion fields: $body"
finish=$(json 'j["choices"][0]["finish_reason"], j["usage"]["completion_tokens"]' <<<"$body")
[[ "$finish" == "length 24" || "$finish" == "stop "* ]] || fail "finish and usage: $finish"

stream=$(curl -sN --max-time 60 -H "Authorization: Bearer $KEY" "$URL/v1/completions" \
  -d "{\"model\": \"toy\", \"prompt\": \"$PROMPT\", \"max_tokens\": 24, \"temperature\": 0, \"stream\": true}")
[ "$(grep '^data: ' <<<"$stream" | tail -1)" = "data: [DONE]" ] || fail "stream does not end with [DONE]: $stream"
streamed=$(grep '^data: {' <<<"$stream" | sed 's/^data: //' |
  python3 -c "import json,sys; print(''.join(json.loads(l)['choices'][0]['text'] for l in sys.stdin))")
[ "$streamed" = "$served" ] || fail "streamed text '$streamed' differs from the JSON answer's '$served'"

seeded='{"model": "toy", "prompt": "Seeded", "max_tokens": 30, "temperature": 0.8, "top_p": 0.9, "seed": 1234}'
first=$(api /v1/completions -d "$seeded" | sed '$d' | json 'j["choices"][0]["text"]')
second=$(api /v1/completions -d "$seeded" | sed '$d' | json 'j["choices"][0]["text"]')
[ "$first" = "$second" ] || fail "the same seed gave '$first' and '$second'"

chat='{"model": "toy", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "max_tokens": 12, "temperature": 0}'
out=$(api /v1/chat/completions -d "$chat")
[ "$(tail -1 <<<"$out")" = 200 ] || fail "chat: $out"
[ "$(sed '$d' <<<"$out" | json 'j["object"], j["choices"][0]["message"]["role"], j["usage"]["completion_tokens"] <= 12')" = "chat.completion assistant True" ] ||
  fail "chat fields: $out"
chat_text=$(sed '$d' <<<"$out" | json 'j["choices"][0]["message"]["content"]')
folded=$(python3 "$CLIENT" request "$URL" "$KEY" /v1/chat/completions "${chat%\}}, \"stream\": true}")
[ "$(json 'j["objects"], j["done"]' <<<"$folded")" = "['chat.completion.chunk'] True" ] &&
  [ "$(json 'j["text"]' <<<"$folded")" = "$chat_text" ] ||
  fail "streamed chat: $folded (JSON answer '$chat_text')"

# --- continuous batching: 16 concurrent streams on 8 slots (8 wait in the
# queue) each equal their solo run; afterwards rank 0's descriptors are back
# where they were and its memory has not grown by more than 32 MiB.
rank0=$(rank_pid "$SERVER_PID" 0)
fds() { ls "/proc/$rank0/fd" | wc -l; }
rss_kib() { awk '/^VmRSS:/{print $2}' "/proc/$rank0/status"; }
fds_before=$(fds) rss_before=$(rss_kib)
python3 "$CLIENT" concurrent "$URL" "$KEY" 16 || fail "concurrent streams differ from their solo runs"
for _ in $(seq 100); do [ "$(fds)" -le "$fds_before" ] && break; sleep 0.1; done
[ "$(fds)" -le "$fds_before" ] || fail "rank 0 holds $(fds) descriptors after the streams, $fds_before before"
[ "$(rss_kib)" -le $((rss_before + 32768)) ] || fail "rank 0's RSS grew from $rss_before to $(rss_kib) KiB"
echo "rank 0: $fds_before -> $(fds) descriptors, RSS $rss_before -> $(rss_kib) KiB"

# --- bad input
# expect_error NAME STATUS TYPE_OR_CODE CURL_ARGS...: the answer has STATUS and
# an error object whose type or code is TYPE_OR_CODE.
expect_error() {
  local name="$1" status="$2" kind="$3"
  shift 3
  local out
  out=$(curl -s --max-time 30 -w '\n%{http_code}' "$@")
  if [ "$(tail -1 <<<"$out")" != "$status" ]; then
    fail "$name: status $(tail -1 <<<"$out"), expected $status: $out"
    return
  fi
  sed '$d' <<<"$out" | python3 -c "
import json, sys
e = json.load(sys.stdin)['error']
assert e['message'] and '$kind' in (e['type'], e['code']), e" 2>/dev/null || fail "$name: no error object with '$kind': $out"
}
auth=(-H "Authorization: Bearer $KEY")
expect_error malformed 400 invalid_request_error "${auth[@]}" "$URL/v1/completions" -d '{"model": "toy", "prompt": '
expect_error wrong_type 400 invalid_request_error "${auth[@]}" "$URL/v1/completions" -d '{"model": "toy", "prompt": "x", "max_tokens": "9"}'
expect_error unknown_field 400 invalid_request_error "${auth[@]}" "$URL/v1/completions" -d '{"model": "toy", "prompt": "x", "bogus": 1}'
expect_error unknown_model 404 model_not_found "${auth[@]}" "$URL/v1/completions" -d '{"model": "gpt-4", "prompt": "x"}'
long=$(printf 'a%.0s' $(seq 1 300))
expect_error too_long 400 context_length_exceeded "${auth[@]}" "$URL/v1/completions" -d "{\"model\": \"toy\", \"prompt\": \"$long\"}"
big=$(printf 'b%.0s' $(seq 1 5000))
expect_error oversized 413 invalid_request_error "${auth[@]}" "$URL/v1/completions" -d "{\"model\": \"toy\", \"prompt\": \"$big\"}"
expect_error no_key 401 invalid_api_key "$URL/v1/completions" -d '{"model": "toy", "prompt": "x"}'
expect_error wrong_key 401 invalid_api_key -H "Authorization: Bearer nope" "$URL/v1/models"
expect_error no_route 404 invalid_request_error "${auth[@]}" "$URL/v1/embeddings" -d '{}'
# The server still answers after all that.
[ "$(api /v1/models | sed '$d' | json 'j["data"][0]["id"]')" = toy ] || fail "/v1/models after bad input"

metrics=$(curl -s --max-time 10 "$URL/metrics")
for line in 'inferno_requests_total{endpoint="/v1/completions",status="200"}' \
  'inferno_requests_total{endpoint="/v1/completions",status="413"} 1' \
  'inferno_time_to_first_token_seconds_count' 'inferno_time_per_token_seconds_bucket{le="+Inf"}' \
  'inferno_queue_depth 0' 'inferno_generated_tokens_total' \
  '# TYPE inferno_rank_compute_seconds_total counter' '# TYPE inferno_rank_wait_seconds_total counter'; do
  grep -qF "$line" <<<"$metrics" || fail "/metrics lacks '$line'"
done
# Every rank's compute and wait seconds, rank 1's carried to the leader by
# the pipeline's tick (about once a second): after the requests above, each
# rank has computed, and rank 1 has waited for the leader.
ranks_reported() {
  curl -s --max-time 10 "$URL/metrics" | awk '
    $1 ~ /^inferno_rank_compute_seconds_total\{rank="[01]"\}$/ && $2 > 0 {computed++}
    $1 == "inferno_rank_wait_seconds_total{rank=\"0\"}" && $2 >= 0 {waited++}
    $1 == "inferno_rank_wait_seconds_total{rank=\"1\"}" && $2 > 0 {waited++}
    END {exit !(computed == 2 && waited == 2)}'
}
for _ in $(seq 200); do ranks_reported && break; sleep 0.05; done
ranks_reported || fail "/metrics lacks ranks 0 and 1 with compute > 0: $(curl -s "$URL/metrics" | grep '^inferno_rank')"
curl -s --max-time 10 "$URL/metrics" | grep '^inferno_rank'

stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "main server: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"

# --- one slot, a queue of one: 429, and a disconnect frees the slot
# A vocabulary of 4000 (the byte-level tokenizer's 259 and ids that print
# nothing): a stop id is rarely sampled, so a 1000-token stream runs for
# seconds (this one, seed 9, runs to its end).
"$MAKE_TOY" --out "$WORK/slow" --dim 256 --layers 4 --seq-len 1024 --vocab 4000 >/dev/null || fail "make_toy_model (slow)"
start_server small -n 2 --timeout 300 -- --model "$WORK/slow" --tokenizer byte-level --model-name toy \
  --slots 1 --queue 1 --max-connections 3 || exit 1
KEY=""
long_request='{"model": "toy", "prompt": "Long", "max_tokens": 1000, "temperature": 0.8, "seed": 9, "stream": true}'
curl -sN --max-time 60 "$URL/v1/completions" -d "$long_request" >"$WORK/first.stream" &
first_pid=$!
# Wait until it runs (a token came), then queue a second behind it.
for _ in $(seq 200); do grep -q '^data: {' "$WORK/first.stream" && break; sleep 0.05; done
curl -sN --max-time 60 "$URL/v1/completions" -d "$long_request" >"$WORK/second.stream" &
second_pid=$!
for _ in $(seq 200); do curl -s "$URL/metrics" | grep -qx 'inferno_queue_depth 1' && break; sleep 0.05; done
expect_error queue_full 429 rate_limit_error "$URL/v1/completions" -d '{"model": "toy", "prompt": "x"}'
# With the two streams and a client still sending its request (held up to
# the 10 s read deadline) on the 3 connections of --max-connections, one
# more is answered 503 at once; once the third has gone, requests are
# served. (The server closes the connections of the requests above soon
# after their clients do: the third is opened again until it is not
# refused, and the fourth is polled.)
hold_connection() {
  exec 3<>"/dev/tcp/127.0.0.1/${URL##*:}"
  printf 'GET /health HTTP/1.1\r\n' >&3
  ! read -r -t 0.2 -u 3 _ # no answer: the server waits for the rest of the request
}
for _ in $(seq 50); do
  hold_connection && break
  exec 3>&-
done
refused=""
for _ in $(seq 100); do
  refused=$(curl -s --max-time 5 -w '\n%{http_code}' "$URL/v1/models")
  [ "$(tail -1 <<<"$refused")" = 503 ] && break
  sleep 0.05
done
[ "$(tail -1 <<<"$refused")" = 503 ] &&
  [ "$(sed '$d' <<<"$refused" | json 'j["error"]["type"], j["error"]["code"]')" = "server_error too_many_connections" ] ||
  fail "a connection over --max-connections 3: $refused"
exec 3>&-
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health")" = 200 ] && break
  sleep 0.05
done
[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health")" = 200 ] ||
  fail "no connection served after the third closed"
refused_count=$(curl -s --max-time 5 "$URL/metrics" | sed -n 's/^inferno_refused_connections_total //p')
[ -n "$refused_count" ] && [ "$refused_count" -ge 1 ] || fail "/metrics counts $refused_count refused connections"
# Both clients leave mid-stream: their sequences are cancelled.
kill "$first_pid" "$second_pid" || fail "a stream ended before its client left"
wait "$first_pid" "$second_pid" 2>/dev/null
expect_cancelled 2000

# --- SIGTERM drains: a stream provably in flight when the signal lands (its
# first token came before the signal, and once /health says "draining",
# /metrics still counts it running) runs to its end: all 300 tokens (the
# first 300 of seed 9's 1000 above), then [DONE]; the job exits 0.
drained=$(python3 "$CLIENT" drain "$URL" "$KEY" "$(rank_pid "$SERVER_PID" 0)" "${long_request/1000/300}")
wait_server 30
echo "drain: $(json 'j["running_after_signal"], j["chunks_before_signal"], j["stream"]["chunks"]' <<<"$drained")"
[ "$(json 'j["running_after_signal"], j["chunks_before_signal"] >= 1' <<<"$drained")" = "1 True" ] ||
  fail "drain: the stream was not seen running after the signal landed: $drained"
[ "$(json 'j["stream"]["done"], j["stream"]["finish"], j["stream"]["error"]' <<<"$drained")" = "True length None" ] ||
  fail "drain: the stream in flight did not run to its end and [DONE]: $drained"
[ "$SERVER_STATUS" -eq 0 ] || fail "drain: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
