#!/bin/bash
# A rank killed with SIGKILL in the middle of an all_reduce: every other rank
# must get PeerLost or Timeout within the group's timeout (plus slack), launch
# must exit non-zero (the victim's 128+9), and no rank may be left running.
# Usage: peer_killed_test.sh LAUNCH PEER_KILLED_CHECK WORLD
set -u
source tests/test_lib.sh
LAUNCH="$1" CHECK="$2" WORLD="$3"
OUT="$(mktemp "${TEST_TMPDIR:-/tmp}/peer_killed.XXXXXX")"
TIMEOUT_MS=3000
SLACK_MS=3000
VICTIM=$((WORLD / 2))

# Survivors ignore launch's SIGTERM and must end on their own; --grace is far
# above TIMEOUT_MS + SLACK_MS, so a survivor that hangs is still running when
# launch's SIGKILL comes, and shows up below as "reported no error".
INFERNO_TIMEOUT_MS=$TIMEOUT_MS timeout 90 "$LAUNCH" -n "$WORLD" --tag-output --grace 20 -- \
  "$CHECK" --victim "$VICTIM" --kill-after-ms 700 --give-up-ms 30000 >"$OUT" 2>&1
status=$?
cat "$OUT"
[ "$status" -eq 137 ] || fail "launch exited $status, want 137 (the victim's SIGKILL)"

killed_at=$(sed -n "s/^\[$VICTIM\] killing myself at \([0-9]*\)$/\1/p" "$OUT")
[ -n "$killed_at" ] || fail "rank $VICTIM never reached its kill"
for ((r = 0; r < WORLD; r++)); do
  [ "$r" -eq "$VICTIM" ] && continue
  line=$(grep "^\[$r\] detected at " "$OUT")
  if [ -z "$line" ]; then
    fail "rank $r reported no error"
    continue
  fi
  echo "$line" | grep -Eq ": (PeerLost|Timeout): " || fail "rank $r: not PeerLost/Timeout: $line"
  detected_at=$(echo "$line" | sed 's/^\[[0-9]*\] detected at \([0-9]*\) .*/\1/')
  if [ -n "$killed_at" ]; then
    took=$((detected_at - killed_at))
    echo "rank $r detected the loss after $took ms (limit $((TIMEOUT_MS + SLACK_MS)) ms)"
    [ "$took" -le $((TIMEOUT_MS + SLACK_MS)) ] || fail "rank $r took $took ms to detect the loss"
  fi
done

for pid in $(sed -n 's/^\[[0-9]*\] pid \([0-9]*\)$/\1/p' "$OUT"); do
  if kill -0 "$pid" 2>/dev/null; then
    fail "process $pid still running after launch exited"
    kill -KILL "$pid" 2>/dev/null
  fi
done
[ "$(grep -c '^\[[0-9]*\] pid ' "$OUT")" -eq "$WORLD" ] || fail "not every rank joined"

rm -f "$OUT"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS: $WORLD ranks"
