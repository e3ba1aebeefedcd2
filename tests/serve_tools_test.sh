#!/bin/bash
# Tool calling through //tools:serve (2-rank pipeline, toy model, a
# Hermes-style chat template that prints tools and <tool_call> blocks):
# - a request with tools, an assistant message with tool_calls and a tool
#   answer is rendered as transformers renders it: Jinja2's rendering with
#   the same variables (tools as given, arguments parsed, key order kept),
#   run through `infer --prompt-ids --dump-logits`, gives the logprobs the
#   server reports for its greedy answer, step by step; tool_choice "none"
#   renders no tools, checked the same way;
# - the answer is a chat.completion (the toy model writes no calls);
# - tool_choice naming an unknown function, and malformed tool messages, get
#   400 naming the field.
#
# Usage: serve_tools_test.sh LAUNCH SERVE INFER MAKE_TOY_MODEL SAMPLING_CHECK_PY CHECK_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" INFER="$3" MAKE_TOY="$4" SAMPLING_CHECK="$5" CHECK="$6"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_tools.XXXXXX")"
KEY="test-key-$RANDOM"
MODEL="$WORK/toy"
"$MAKE_TOY" --out "$WORK/toy" --seq-len 1024 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
cat >"$WORK/chat.jinja" <<'TEMPLATE'
{% if tools %}<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>
{% endif %}
{% for m in messages %}<{{ m.role }}>{{ m.content }}
{% if m.tool_calls %}{% for call in m.tool_calls %}<tool_call>{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}</tool_call>
{% endfor %}{% endif %}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}
TEMPLATE

start_server tools -n 2 --timeout 300 -- --model "$WORK/toy" --api-key "$KEY" --chat-template "$WORK/chat.jinja" ||
  exit 1

cat >"$WORK/round_trip.json" <<'JSON'
{"model": "toy", "max_tokens": 8, "temperature": 0, "logprobs": true, "top_logprobs": 3,
 "messages": [{"role": "user", "content": "Weather in Paris?"},
              {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
               "function": {"name": "get_weather", "arguments": "{\"unit\": \"c\", \"city\": \"Paris\"}"}}]},
              {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"}],
 "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}}}]}
JSON
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["tool_choice"]="none"; json.dump(r, open(sys.argv[2], "w"))' \
  "$WORK/round_trip.json" "$WORK/none.json"
for request in round_trip none; do
  out=$(api /v1/chat/completions -d @"$WORK/$request.json")
  if [ "$(tail -1 <<<"$out")" != 200 ]; then
    fail "$request: $out"
    continue
  fi
  sed '$d' <<<"$out" >"$WORK/$request.answer"
  [ "$(json 'j["object"], j["choices"][0]["message"]["role"]' <"$WORK/$request.answer")" = "chat.completion assistant" ] ||
    fail "$request: answer fields: $(cat "$WORK/$request.answer")"
  ids=$(python3 "$CHECK" "$WORK/chat.jinja" "$WORK/$request.json")
  case $? in
    0)
      [ "$(json 'j["usage"]["prompt_tokens"]' <"$WORK/$request.answer")" = "$(wc -w <<<"$ids")" ] ||
        fail "$request: the prompt's length differs from transformers' rendering"
      infer_ids "$request" 1 --prompt-ids "$ids" --max-new-tokens 8 --dump-logits "$WORK/$request.logits" &&
        { python3 "$SAMPLING_CHECK" logprobs "$WORK/$request.answer" "$WORK/$request.logits" "$WORK/$request.ids" 259 ||
          fail "$request: the served prompt is not transformers' rendering"; }
      ;;
    3) echo "SKIP: python3-jinja2 is missing; the rendering is not compared" ;;
    *) fail "$request: the reference rendering failed" ;;
  esac
done
with_tools=$(json 'j["usage"]["prompt_tokens"]' <"$WORK/round_trip.answer")
without=$(json 'j["usage"]["prompt_tokens"]' <"$WORK/none.answer")
[ "$with_tools" -gt "$without" ] || fail "tool_choice none: $without prompt tokens, with tools $with_tools"

expect_400() {
  local name="$1" field="$2" body="$3" out
  out=$(api /v1/chat/completions -d "$body")
  [ "$(tail -1 <<<"$out")" = 400 ] && grep -q "$field" <<<"$out" || fail "$name: expected 400 naming $field: $out"
}
tools='"tools": [{"type": "function", "function": {"name": "f"}}]'
expect_400 unknown_function "'tool_choice'" '{"model": "toy", "messages": [{"role": "user", "content": "x"}], '"$tools"', "tool_choice": {"type": "function", "function": {"name": "g"}}}'
expect_400 tool_without_id "tool_call_id" '{"model": "toy", "messages": [{"role": "tool", "content": "x"}]}'
expect_400 bad_arguments "arguments" '{"model": "toy", "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{"}}]}]}'

stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"
rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
