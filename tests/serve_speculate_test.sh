#!/bin/bash
# Speculative decoding in //tools:serve: the official `openai` npm package
# (pinned; tools/fetch_openai_client.sh caches it outside the tree) asks a
# serve without --speculate and one with --speculate 4 (on 2 ranks, --tp 2
# against --tp 2) the same greedy requests and gets the same text
# (serve_speculate_client.cjs); the speculating one's /metrics count drafted
# tokens, some of them accepted, the other's none. Skips when node or the
# package is absent.
#
# Usage: serve_speculate_test.sh LAUNCH SERVE MAKE_TOY_MODEL CLIENT_CJS
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" CLIENT="$4"
source tests/serve_lib.sh
home="$(getent passwd "$(id -u)" | cut -d: -f6)"
PACKAGE="${INFERNO_CACHE:-$home/.cache/inferno}/openai-client/node_modules/openai"
if ! command -v node >/dev/null || [ ! -f "$PACKAGE/package.json" ]; then
  skip "node or $PACKAGE not found (tools/fetch_openai_client.sh fetches it)"
fi
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_speculate.XXXXXX")"
"$MAKE_TOY" --out "$WORK/toy" --seq-len 1024 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
printf '%s' '{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>' >"$WORK/chat.jinja"
ARGS=(--model "$WORK/toy" --chat-template "$WORK/chat.jinja" --tp 2 --slots 4)

start_server plain -n 2 --timeout 120 -- "${ARGS[@]}" || exit 1
PLAIN_PID=$SERVER_PID PLAIN_URL=$URL
if start_server speculating -n 2 --timeout 120 -- "${ARGS[@]}" --speculate 4; then
  timeout 120 node "$CLIENT" "$PACKAGE" "$PLAIN_URL" "$URL" || fail "the openai client's checks"
  metric() { curl -s --max-time 10 "$1/metrics" | sed -n "s/^inferno_speculative_$2_tokens_total //p"; }
  drafted=$(metric "$URL" drafted) accepted=$(metric "$URL" accepted)
  echo "speculating server: $drafted drafted tokens, $accepted accepted"
  [ -n "$accepted" ] && [ "$accepted" -gt 0 ] && [ "$drafted" -ge "$accepted" ] ||
    fail "the speculating server's metrics: $drafted drafted, $accepted accepted"
  [ "$(metric "$PLAIN_URL" drafted)" = 0 ] || fail "the plain server drafted tokens"
  stop_server
  [ "$SERVER_STATUS" -eq 0 ] || fail "the speculating launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"
fi
SERVER_PID=$PLAIN_PID SERVER_OUT="$WORK/plain.out"
stop_server
[ "$SERVER_STATUS" -eq 0 ] || fail "the plain launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"
rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo PASS
