#!/bin/bash
# launch killed with SIGKILL while its ranks run behind a shell (`sh -c` that
# forks, so the kernel's parent-death signal reaches only the shell): every
# rank notices launch's lifeline close and exits within 2 s, naming the
# launcher; nothing of the job is left running.
# Usage: launcher_killed_test.sh LAUNCH SOAK_BENCH
set -u
source tests/test_lib.sh
LAUNCH="$1" SOAK="$2"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/launcher_killed.XXXXXX")"

# Each rank: a shell that records its pid, starts the rank in the background
# (so the shell, not the rank, is launch's child) and records the rank's pid.
# The ranks run 1000 small collectives, then all_reduces without end.
# shellcheck disable=SC2016
"$LAUNCH" -n 2 -- sh -c 'echo $$ > "$0/shell.$RANK"; "$1" --small-ops 1000 --large-ops 1000000000 \
  --large-bytes 64 > "$0/out.$RANK" 2> "$0/err.$RANK" & echo $! > "$0/rank.$RANK"; wait' "$WORK" "$SOAK" &
launch_pid=$!
# Launch is killed once both ranks have joined the group, run the small
# collectives and started the endless phase (60 s at most).
running() { grep -qs "^soak rank 0 large start" "$WORK/out.0" && grep -qs "^soak rank 1 large start" "$WORK/out.1"; }
deadline=$(($(now_ms) + 60000))
while ! running && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.05; done
if ! running; then
  fail "the ranks did not reach their collectives within 60 s: $(cat "$WORK"/out.* "$WORK"/err.* 2>/dev/null)"
  kill -KILL "$launch_pid" $(cat "$WORK"/rank.* "$WORK"/shell.* 2>/dev/null) 2>/dev/null
  exit 1
fi

killed_ms=$(now_ms)
kill -KILL "$launch_pid"
wait "$launch_pid" 2>/dev/null
for pid in $(cat "$WORK"/rank.* "$WORK"/shell.*); do
  for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    fail "process $pid is still running 2 s after launch was killed"
    kill -KILL "$pid" 2>/dev/null
  fi
done
echo "every process gone $(($(now_ms) - killed_ms)) ms after SIGKILL to launch"
for r in 0 1; do
  grep -q "the launcher that started this rank is gone" "$WORK/err.$r" ||
    fail "rank $r did not say why it exited: $(cat "$WORK/err.$r")"
done

if [ "$FAILURES" -ne 0 ]; then
  echo "$FAILURES failures" >&2
  exit 1
fi
echo "PASS: no rank outlived a SIGKILLed launch"
