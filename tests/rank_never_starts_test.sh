#!/bin/bash
# Ranks that never start: of a 4-rank //tools:infer job under //tools:launch,
# ranks 2 and 3 run `sleep` instead of infer. Rank 0's rendezvous must time out
# (after INFERNO_RENDEZVOUS_TIMEOUT_MS, 10 s here) with an error listing ranks 2 and 3;
# rank 1 must fail with rank 0's verdict; launch exits non-zero; no process of
# the job is left behind. Survivors inherit SIGTERM as ignored, so they must
# end on their own.
#
# Usage: rank_never_starts_test.sh LAUNCH INFER MAKE_TOY_MODEL
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/rank_never_starts.XXXXXX")"
RENDEZVOUS_TIMEOUT_S=10

"$MAKE_TOY" --out "$WORK/toy" --layers 4 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }

started=$(date +%s)
(
  trap '' TERM
  export INFERNO_RENDEZVOUS_TIMEOUT_MS=$((RENDEZVOUS_TIMEOUT_S * 1000))
  exec "$LAUNCH" -n 4 --tag-output --timeout 90 --grace 2 -- /bin/bash -c \
    'if [ "$RANK" -ge 2 ]; then echo "pid $$ never starts"; exec sleep 120; fi
     echo "pid $$"; exec "$0" "$@"' \
    "$INFER" --model "$WORK/toy" --prompt "Once upon a time" --max-new-tokens 8 --output ids
) >"$WORK/out" 2>&1
status=$?
took=$(($(date +%s) - started))
cat "$WORK/out"

[ "$status" -ne 0 ] || fail "launch exited 0"
[ "$status" -ne 124 ] || fail "launch hit its own --timeout: the job hung"
[ "$took" -le $((RENDEZVOUS_TIMEOUT_S + 10)) ] || fail "the job took $took s (rendezvous timeout ${RENDEZVOUS_TIMEOUT_S} s)"
grep -Eq "^\[0\] infer: rank 0: joining the process group: Timeout: .*ranks 2, 3 of 4 did not arrive within ${RENDEZVOUS_TIMEOUT_S}000 ms" "$WORK/out" ||
  fail "rank 0 did not report a Timeout listing ranks 2, 3"
grep -Eq "^\[1\] infer: rank 1: joining the process group: .*ranks 2, 3 of 4 did not arrive" "$WORK/out" ||
  fail "rank 1 did not report rank 0's verdict listing ranks 2, 3"

for pid in $(sed -n 's/^\[[0-9]*\] pid \([0-9]*\).*$/\1/p' "$WORK/out"); do
  if kill -0 "$pid" 2>/dev/null; then
    fail "process $pid left behind"
    kill -KILL "$pid"
  fi
done
[ "$(grep -c '^\[[0-9]*\] pid ' "$WORK/out")" -eq 4 ] || fail "not every rank's process started"

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS: missing ranks 2, 3 reported after $took s"
