#!/bin/bash
# Speculative decoding in //tools:serve: the official `openai` npm package
# (pinned; tools/fetch_openai_client.sh caches it outside the tree) asks a
# serve without --speculate and one with --speculate 4 (on 2 ranks: --tp 2
# against --tp 2, then --pp 2 against --pp 2) the same greedy requests and
# gets the same text (serve_speculate_client.cjs); the speculating one's
# /metrics count drafted tokens, some of them accepted, the other's none.
# Then the same with a draft model (--draft: a 2-layer toy model of the
# target's vocabulary) under --pp 2 and --tp 2 (the leader broadcasting its
# drafts), where sequences come and go in the continuous batch, each with
# its own draft state. Skips when node or the
# package is absent.
#
# Usage: serve_speculate_test.sh LAUNCH SERVE MAKE_TOY_MODEL CLIENT_CJS
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" CLIENT="$4"
source tests/serve_lib.sh
require_openai_client
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_speculate.XXXXXX")"
"$MAKE_TOY" --out "$WORK/toy" --seq-len 1024 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
printf '%s' '{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>' >"$WORK/chat.jinja"
"$MAKE_TOY" --out "$WORK/draft" --seq-len 1024 --layers 2 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
ARGS=(--model "$WORK/toy" --chat-template "$WORK/chat.jinja" --slots 4)
SPECULATE=(--speculate 4)

# pair GRID...: a serve on 2 ranks with GRID without and one with
# SPECULATE's flags (LABEL tells the pairs of a grid apart).
pair() {
  local plain_pid plain_url drafted accepted name
  name=$(tr -d ' -' <<<"$*${LABEL:-}")
  start_server "plain_$name" -n 2 --timeout 120 -- "${ARGS[@]}" "$@" || return
  plain_pid=$SERVER_PID plain_url=$URL
  if start_server "speculating_$name" -n 2 --timeout 120 -- "${ARGS[@]}" "$@" "${SPECULATE[@]}"; then
    timeout 120 node "$CLIENT" "$PACKAGE" "$plain_url" "$URL" || fail "$*: the openai client's checks"
    drafted=$(metric "$URL" drafted) accepted=$(metric "$URL" accepted)
    echo "$*: the speculating server: $drafted drafted tokens, $accepted accepted"
    [ -n "$accepted" ] && [ "$accepted" -gt 0 ] && [ "$drafted" -ge "$accepted" ] ||
      fail "$*: the speculating server's metrics: $drafted drafted, $accepted accepted"
    [ "$(metric "$plain_url" drafted)" = 0 ] || fail "$*: the plain server drafted tokens"
    stop_server
    [ "$SERVER_STATUS" -eq 0 ] || fail "$*: the speculating launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"
  fi
  SERVER_PID=$plain_pid SERVER_OUT="$WORK/plain_$name.out"
  stop_server
  [ "$SERVER_STATUS" -eq 0 ] || fail "$*: the plain launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"
}
metric() { curl -s --max-time 10 "$1/metrics" | sed -n "s/^inferno_speculative_$2_tokens_total //p"; }

pair --tp 2
pair --pp 2
SPECULATE=(--speculate 4 --draft "$WORK/draft") LABEL=draft
pair --pp 2
pair --tp 2
rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo PASS
