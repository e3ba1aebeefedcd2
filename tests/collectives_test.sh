#!/bin/bash
# Every ProcessGroup call across real processes: launch starts WORLD ranks of
# collectives_check, which joins over TCP (or ipc:// with --ipc) and checks
# every result exactly. Passes when launch exits 0 and every rank reports OK.
# The job is secured (CURVE + ZAP, launch's default); with --insecure it runs
# under `launch --insecure` (plain ZeroMQ).
# Usage: collectives_test.sh LAUNCH COLLECTIVES_CHECK WORLD [--ipc | --insecure]
set -u
LAUNCH="$1" CHECK="$2" WORLD="$3"
shift 3
LAUNCH_FLAGS=()
if [ "${1:-}" = "--insecure" ]; then
  LAUNCH_FLAGS=(--insecure)
  shift
fi
OUT="$(mktemp "${TEST_TMPDIR:-/tmp}/collectives.XXXXXX")"

timeout 150 "$LAUNCH" -n "$WORLD" "${LAUNCH_FLAGS[@]}" --tag-output --timeout 120 --grace 2 -- "$CHECK" "$@" >"$OUT" 2>&1
status=$?
cat "$OUT"
if [ "$status" -ne 0 ]; then
  echo "FAIL: launch -n $WORLD exited $status" >&2
  exit 1
fi
for ((r = 0; r < WORLD; r++)); do
  if ! grep -Eq "^\[$r\] rank $r: OK \([1-9][0-9]* checks\)$" "$OUT"; then
    echo "FAIL: rank $r did not report OK" >&2
    exit 1
  fi
done
if grep -q "FAILED" "$OUT"; then
  echo "FAIL: a check failed" >&2
  exit 1
fi
rm -f "$OUT"
echo "PASS: $WORLD ranks ${LAUNCH_FLAGS[*]} $*"
