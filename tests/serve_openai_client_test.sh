#!/bin/bash
# The official `openai` npm package (pinned; tools/fetch_openai_client.sh
# caches it outside the tree) talks to //tools:serve on 2 ranks:
# serve_openai_client.cjs. Skips when node or the package is absent.
#
# Usage: serve_openai_client_test.sh LAUNCH SERVE MAKE_TOY_MODEL CLIENT_CJS
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" CLIENT="$4"
source tests/serve_lib.sh
require_openai_client
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_openai.XXXXXX")"
KEY="key-$RANDOM"
"$MAKE_TOY" --out "$WORK/toy" --seq-len 1024 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
# Prints the tools with a Qwen-style <tool_call> marker, so that calls are read back.
printf '%s' '{% if tools %}<tools>{{ tools | tojson }}</tools> <tool_call>{% endif %}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>' >"$WORK/chat.jinja"
start_server openai -n 2 --timeout 120 -- --model "$WORK/toy" --api-key "$KEY" --chat-template "$WORK/chat.jinja" ||
  exit 1
timeout 120 node "$CLIENT" "$PACKAGE" "$URL" "$KEY" || fail "the openai client's checks"
stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"
rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo PASS
