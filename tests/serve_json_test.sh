#!/bin/bash
# Constrained output through //tools:serve (2-rank pipeline, toy model with
# 1024 positions, a chat template with Qwen-style <tool_call> tools):
# - 50 response_format json_schema requests at temperature 1 (8 at a time,
#   each with its own seed): 50/50 answers parse and validate against the
#   schema (objects, nested objects, arrays, enums, strings with lengths,
#   numbers, integers, booleans, required), finish_reason "stop";
# - 10 json_object requests: each answer is a JSON object;
# - tool_choice "required" and a named function: one tool call whose
#   arguments validate against the tool's parameters, finish_reason
#   "tool_calls", the streamed deltas joined equal to the JSON answer's call;
#   then the round trip (the call and a tool message) is answered;
# - an unsupported schema keyword gets 400 naming it.
#
# Usage: serve_json_test.sh LAUNCH SERVE MAKE_TOY_MODEL CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" CLIENT="$4"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_json.XXXXXX")"
KEY="test-key-$RANDOM"
"$MAKE_TOY" --out "$WORK/toy" --seq-len 1024 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
printf '%s' '{% if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools> in <tool_call></tool_call>
{% endif %}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}
{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}' >"$WORK/chat.jinja"
start_server json -n 2 --timeout 300 -- --model "$WORK/toy" --api-key "$KEY" --chat-template "$WORK/chat.jinja" \
  --slots 8 || exit 1

python3 "$CLIENT" schema "$URL" "$KEY" 50 || fail "json_schema answers"
python3 "$CLIENT" object "$URL" "$KEY" 10 || fail "json_object answers"
python3 "$CLIENT" tool "$URL" "$KEY" || fail "forced tool calls"
out=$(api /v1/chat/completions -d '{"model": "toy", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "integer", "minimum": 0}}}}')
[ "$(tail -1 <<<"$out")" = 400 ] && grep -q "unsupported keyword 'minimum'" <<<"$out" ||
  fail "an unsupported keyword: $out"

stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"
rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
