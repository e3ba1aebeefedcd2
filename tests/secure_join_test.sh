#!/bin/bash
# A process without a job's key cannot join it: under `launch -n 3` (which
# secures the job), rank 2 runs collectives_check with another secret, then
# (second run) with none, asking for an insecure job (INFERNO_INSECURE=1). Rank 2 must fail at once with one line saying
# rank 0 refused it and naming INFERNO_JOB_SECRET, long before the rendezvous
# timeout (30 s); no rank reports a joined group; launch exits non-zero; no
# process is left behind.
#
# Usage: secure_join_test.sh LAUNCH COLLECTIVES_CHECK JOB_KEY
set -u
source tests/test_lib.sh
LAUNCH="$1" CHECK="$2" JOB_KEY="$3"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/secure_join.XXXXXX")"
MAX_SECONDS=15

INFERNO_JOB_SECRET=$("$JOB_KEY") || { echo "FAIL: job_key" >&2; exit 1; }
export INFERNO_JOB_SECRET
ANOTHER_SECRET=$("$JOB_KEY") || { echo "FAIL: job_key" >&2; exit 1; }

for impostor in another-secret no-secret; do
  if [ "$impostor" = another-secret ]; then
    export IMPOSTOR_SECRET="$ANOTHER_SECRET"
  else
    export IMPOSTOR_SECRET=""
  fi
  started=$(date +%s)
  timeout 90 "$LAUNCH" -n 3 --tag-output --timeout 60 --grace 2 -- /bin/bash -c \
    'echo "pid $$"
     if [ "$RANK" = 2 ]; then
       if [ -n "$IMPOSTOR_SECRET" ]; then export INFERNO_JOB_SECRET="$IMPOSTOR_SECRET"; else unset INFERNO_JOB_SECRET; export INFERNO_INSECURE=1; fi
     fi
     exec "$0" "$@"' "$CHECK" >"$WORK/$impostor.out" 2>&1
  status=$?
  took=$(($(date +%s) - started))
  echo "--- $impostor: launch exited $status after $took s"
  cat "$WORK/$impostor.out"

  [ "$status" -ne 0 ] || fail "$impostor: launch exited 0: the impostor joined"
  [ "$status" -ne 124 ] || fail "$impostor: launch hit its --timeout: the job hung"
  [ "$took" -le "$MAX_SECONDS" ] || fail "$impostor: the job took $took s to fail (limit $MAX_SECONDS s)"
  grep -Eq "^\[2\] FAILED: rendezvous: Transport: rendezvous: rank 0 at 127\.0\.0\.1:[0-9]+ refused this rank: .*INFERNO_JOB_SECRET" "$WORK/$impostor.out" ||
    fail "$impostor: rank 2 did not fail with rank 0's refusal naming INFERNO_JOB_SECRET"
  ! grep -q "OK (" "$WORK/$impostor.out" || fail "$impostor: a rank formed a group"
  for pid in $(sed -n 's/^\[[0-9]*\] pid \([0-9]*\)$/\1/p' "$WORK/$impostor.out"); do
    if kill -0 "$pid" 2>/dev/null; then
      fail "$impostor: process $pid left behind"
      kill -KILL "$pid"
    fi
  done
done

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS: an impostor without the job's key was refused at the rendezvous"
