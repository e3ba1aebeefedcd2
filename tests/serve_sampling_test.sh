#!/bin/bash
# //tools:serve's sampling options through real HTTP clients, on a 2-stage
# pipeline (2 x 1) and on a tensor-parallel stage (1 x 2) of the toy model:
# - logprobs (/v1/completions, 5 alternatives) and logprobs + top_logprobs
#   (/v1/chat/completions, 20): each greedy token's logprob is the
#   log-softmax of `infer --dump-logits`'s logits at its step for infer's
#   token, the alternatives are the most likely, in order; streamed logprobs
#   equal the JSON answer's; under tensor parallelism too, where a sequence
#   with logprobs gathers the whole logit vector instead of each rank's best;
# - presence_penalty and frequency_penalty: every greedy pick beats the
#   listed alternatives once penalized, and the penalties change picks; the
#   same penalized request gives the same text on both grids, and so does one
#   with repetition_penalty;
# - out-of-range penalties and logprobs get 400 naming the field, and tools
#   given to a model whose chat template prints none get 400;
# - response_format json_schema under tensor parallelism, where only the
#   leader samples: the answers are objects, and the greedy one equals the
#   pipeline's.
#
# Usage: serve_sampling_test.sh LAUNCH SERVE INFER MAKE_TOY_MODEL CHECK_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" INFER="$3" MAKE_TOY="$4" CHECK="$5"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_sampling.XXXXXX")"
KEY="test-key-$RANDOM"
VOCAB=259
"$MAKE_TOY" --out "$WORK/toy" >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
printf '%s' '{% for m in messages %}<{{ m.role }}>{{ m.content }}
{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}' >"$WORK/chat.jinja"
PROMPT="Once upon a time"
STEPS=16
MODEL="$WORK/toy"
infer_ids completion 1 --prompt "$PROMPT" --max-new-tokens $STEPS --dump-logits "$WORK/completion.logits"
# The chat prompt as the template renders it, without BOS, in the byte
# tokenizer's ids (a byte's id is the byte + 3).
CHAT_IDS=$(python3 -c 'print(" ".join(str(b + 3) for b in "<user>Tell me a story\n<assistant>".encode()))')
infer_ids chat 1 --prompt-ids "$CHAT_IDS" --max-new-tokens $STEPS --dump-logits "$WORK/chat.logits"

# post NAME PATH BODY: the answer in $WORK/NAME.json; fails unless 200.
post() {
  local out
  out=$(api "$2" -d "$3")
  sed '$d' <<<"$out" >"$WORK/$1.json"
  [ "$(tail -1 <<<"$out")" = 200 ] || { fail "$1: status $(tail -1 <<<"$out"): $out"; return 1; }
}
# stream NAME PATH BODY: the server-sent events in $WORK/NAME.stream.
stream() {
  curl -sN --max-time 60 -H "Authorization: Bearer $KEY" "$URL$2" -d "${3%\}}, \"stream\": true}" >"$WORK/$1.stream"
}

completion="{\"model\": \"toy\", \"prompt\": \"$PROMPT\", \"max_tokens\": $STEPS, \"temperature\": 0, \"logprobs\": 5}"
chat='{"model": "toy", "messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": '$STEPS', "temperature": 0, "logprobs": true, "top_logprobs": 20}'
penalized='{"model": "toy", "messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 48, "temperature": 0, "logprobs": true, "top_logprobs": 20, "presence_penalty": 0.4, "frequency_penalty": 0.3}'
json_greedy='{"model": "toy", "messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 40, "temperature": 0, "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 4}, "b": {"enum": [true, 1, "x"]}}, "required": ["a", "b"]}}}}'
repetition="{\"model\": \"toy\", \"prompt\": \"$PROMPT\", \"max_tokens\": 32, \"temperature\": 0, \"repetition_penalty\": 1.3}"

# sampling_checks GRID: every check on the running server.
sampling_checks() {
  local grid="$1"
  if post "$grid.completion" /v1/completions "$completion"; then
    python3 "$CHECK" logprobs "$WORK/$grid.completion.json" "$WORK/completion.logits" "$WORK/completion.ids" $VOCAB ||
      fail "$grid: completion logprobs"
    stream "$grid.completion" /v1/completions "$completion"
    python3 "$CHECK" stream-equals "$WORK/$grid.completion.json" "$WORK/$grid.completion.stream" ||
      fail "$grid: streamed completion logprobs"
  fi
  if post "$grid.chat" /v1/chat/completions "$chat"; then
    python3 "$CHECK" logprobs "$WORK/$grid.chat.json" "$WORK/chat.logits" "$WORK/chat.ids" $VOCAB ||
      fail "$grid: chat logprobs"
    stream "$grid.chat" /v1/chat/completions "$chat"
    python3 "$CHECK" stream-equals "$WORK/$grid.chat.json" "$WORK/$grid.chat.stream" ||
      fail "$grid: streamed chat logprobs"
  fi
  if post "$grid.penalized" /v1/chat/completions "$penalized"; then
    python3 "$CHECK" penalized "$WORK/$grid.penalized.json" 0.4 0.3 || fail "$grid: penalized picks"
  fi
  post "$grid.repetition" /v1/completions "$repetition"
  post "$grid.plain" /v1/completions "${repetition/, \"repetition_penalty\": 1.3/}"
}

start_server pipeline -n 2 --timeout 300 -- --model "$WORK/toy" --api-key "$KEY" --chat-template "$WORK/chat.jinja" ||
  exit 1
sampling_checks pp2
expect_field() {
  local name="$1" field="$2" body="$3" out
  out=$(api /v1/completions -d "$body")
  [ "$(tail -1 <<<"$out")" = 400 ] && grep -q "'$field'" <<<"$out" || fail "$name: expected 400 naming '$field': $out"
}
expect_field presence presence_penalty '{"model": "toy", "prompt": "x", "presence_penalty": 2.5}'
expect_field frequency frequency_penalty '{"model": "toy", "prompt": "x", "frequency_penalty": -9}'
expect_field repetition repetition_penalty '{"model": "toy", "prompt": "x", "repetition_penalty": 0}'
expect_field logprobs logprobs '{"model": "toy", "prompt": "x", "logprobs": 6}'
# This template prints no tools: a request with tools is refused, not answered without them.
out=$(api /v1/chat/completions -d '{"model": "toy", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}]}')
[ "$(tail -1 <<<"$out")" = 400 ] && grep -q '"param":"tools"' <<<"$out" || fail "tools with a template without them: $out"
post pp2.json /v1/chat/completions "$json_greedy"
stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "2 x 1: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"

start_server tensor_parallel -n 2 --timeout 300 -- --model "$WORK/toy" --tp 2 --api-key "$KEY" \
  --chat-template "$WORK/chat.jinja" || exit 1
sampling_checks tp2
# Constrained output: the leader alone samples and its stage peer takes its
# tokens; the answers are objects (with the schema's keys), and a greedy one
# equals the 2 x 1 grid's.
for seed in 1 2 3; do
  out=$(api /v1/chat/completions -d '{"model": "toy", "messages": [{"role": "user", "content": "x"}], "max_tokens": 40, "temperature": 1, "seed": '$seed', "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 4}, "b": {"enum": [true, 1, "x"]}}, "required": ["a", "b"]}}}}')
  [ "$(tail -1 <<<"$out")" = 200 ] && sed '$d' <<<"$out" |
    json 'list(json.loads(j["choices"][0]["message"]["content"])) == ["a", "b"] and j["choices"][0]["finish_reason"] == "stop"' |
    grep -qx True || fail "json_schema under tensor parallelism: $out"
done
post tp2.json /v1/chat/completions "$json_greedy"
stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "1 x 2: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"

text() { json 'j["choices"][0]["message"]["content"] if "message" in j["choices"][0] else j["choices"][0]["text"]' <"$WORK/$1.json"; }
for request in penalized repetition json; do
  [ "$(text pp2.$request)" = "$(text tp2.$request)" ] ||
    fail "$request: 2 x 1 gave '$(text pp2.$request)', 1 x 2 '$(text tp2.$request)'"
done
[ "$(text pp2.repetition)" != "$(text pp2.plain)" ] ||
  fail "repetition_penalty 1.3 changed nothing: '$(text pp2.plain)'"

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
