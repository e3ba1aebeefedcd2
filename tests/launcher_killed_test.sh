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
# shellcheck disable=SC2016
"$LAUNCH" -n 2 -- sh -c 'echo $$ > "$0/shell.$RANK"; "$1" --small-ops 1000000000 --large-ops 0 \
  > /dev/null 2> "$0/err.$RANK" & echo $! > "$0/rank.$RANK"; wait' "$WORK" "$SOAK" &
launch_pid=$!
for _ in $(seq 100); do
  [ "$(ls "$WORK"/rank.* 2>/dev/null | wc -l)" -ge 2 ] && break
  sleep 0.1
done
[ "$(ls "$WORK"/rank.* 2>/dev/null | wc -l)" -ge 2 ] || fail "the ranks never started"
sleep 1  # let the ranks join the group and run collectives

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
