#!/bin/bash
# The prefix cache through //tools:serve (toy model with 2048 positions, a
# plain chat template), on 1 rank, a pipeline of 2 stages and a stage of 2
# tensor-parallel ranks:
# - a 10-turn greedy chat (each request the whole conversation, an unrelated
#   prompt in the same slot between turns) gives the same answers with
#   --cache-mib 4 as with --cache-mib 0;
# - with the cache, turns 2-10 start with the turn before's prompt: /metrics
#   counts 9 hits and their restored positions;
# - 40 distinct prompts after it: the cache evicts, and its bytes never pass
#   its budget (4 MiB: 256 blocks of the toy's 16 KiB).
#
# Usage: serve_prefix_cache_test.sh LAUNCH SERVE MAKE_TOY_MODEL CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" CLIENT="$4"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_prefix.XXXXXX")"
"$MAKE_TOY" --out "$WORK/toy" --seq-len 2048 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
printf '%s' '{% for m in messages %}<{{ m.role }}>{{ m.content }}
{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}' >"$WORK/chat.jinja"

metric() { curl -s --max-time 10 "$URL/metrics" | sed -n "s/^$1 //p"; }

for grid in "1" "2" "2 --tp 2"; do
  read -r ranks tp_flags <<<"$grid"
  name="grid_${ranks}${tp_flags// /}"
  for cache in 0 4; do
    # shellcheck disable=SC2086  # tp_flags is empty or two words
    start_server "$name.cache$cache" -n "$ranks" --timeout 300 -- --model "$WORK/toy" \
      --chat-template "$WORK/chat.jinja" --slots 4 --cache-mib "$cache" $tp_flags || exit 1
    python3 "$CLIENT" chat "$URL" 10 >"$WORK/$name.$cache.json" || fail "$grid: the chat with --cache-mib $cache"
    if [ "$cache" = 4 ]; then
      hits=$(metric inferno_prefix_cache_hits_total)
      positions=$(metric inferno_prefix_cache_hit_positions_total)
      [ "$hits" = 9 ] || fail "$grid: $hits prefix cache hits in 10 turns, expected 9"
      [ -n "$positions" ] && [ "$positions" -ge $((9 * 80)) ] ||
        fail "$grid: $positions positions restored, fewer than each turn's first 80"
      largest=$(python3 "$CLIENT" distinct "$URL" 40 $((4 << 20))) || fail "$grid: distinct prompts"
      [ "$(metric inferno_prefix_cache_capacity_bytes)" = $((4 << 20)) ] || fail "$grid: the capacity"
      [ "$(metric inferno_prefix_cache_evictions_total)" -gt 0 ] || fail "$grid: no evictions"
      echo "$grid: $hits hits, $positions positions restored, at most $largest bytes cached"
    else
      [ "$(metric inferno_prefix_cache_lookups_total)" = 0 ] || fail "$grid: lookups with the cache off"
    fi
    stop_server
    [ "$SERVER_STATUS" -eq 0 ] || fail "$grid: launch exited $SERVER_STATUS: $(cat "$SERVER_OUT")"
  done
  cmp -s "$WORK/$name.0.json" "$WORK/$name.4.json" ||
    fail "$grid: the answers differ with the cache on: $(cat "$WORK/$name.0.json") vs $(cat "$WORK/$name.4.json")"
done

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
