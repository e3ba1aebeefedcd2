#!/bin/bash
# One rank of a pipeline-parallel //tools:infer generation (toy model, under
# //tools:launch) is SIGKILLed or SIGSTOPped at a random point. For each
# victim (the first stage W-1, a middle stage, the leader 0, which is also the
# last stage) and each signal:
# - every surviving rank exits on its own within INFERNO_TIMEOUT_MS + 2 s of
#   the fault, non-zero, with one "infer: rank R: ..." line that is a PeerLost
#   or Timeout naming a peer rank and the op (send/recv, or the
#   tensor-parallel all_reduce/all_gather);
# - every survivor names the victim: the first to notice the loss sends the
#   others an abort notice quoting its error, so a survivor that only waits on
#   another survivor reports the victim, not that neighbour;
# - launch exits non-zero, and no process of the job is left behind (launch
#   SIGKILLs a stopped victim after --grace).
# The survivors inherit SIGTERM as ignored, so launch's SIGTERM cannot end them:
# they must notice the loss themselves.
# With TP > 1 the grid is WORLD/TP stages of TP tensor-parallel ranks, whose
# all_reduces are where most survivors wait when the victim goes.
#
# Usage: rank_fault_test.sh LAUNCH INFER MAKE_TOY_MODEL WORLD [TP]
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" WORLD="$4" TP="${5:-1}"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/rank_fault.XXXXXX")"
TIMEOUT_MS=2000
SLACK_MS=2000
PROMPT_LINE="Once upon a time"
PROMPT="$PROMPT_LINE
"

# A generation of several seconds even on an idle machine (dim 384: a 1000-token
# run of the default dim-64 model ends in under a second), so that the fault
# lands mid-decode.
"$MAKE_TOY" --out "$WORK/toy" --dim 384 --layers 4 --seq-len 1024 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }

# rank_pids LAUNCH_PID: prints "rank pid" for every child of launch.
rank_pids() {
  local pid
  for pid in $(pgrep -P "$1"); do
    local rank
    rank=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^RANK=//p')
    [ -n "$rank" ] && echo "$rank $pid"
  done
}

# run_case SIGNAL VICTIM
run_case() {
  local signal="$1" victim="$2"
  local name="$signal-rank$victim-of$WORLD-tp$TP" grace=$(((TIMEOUT_MS + SLACK_MS) / 1000 + 1))
  local out="$WORK/$name.out"
  [ "$signal" = STOP ] && grace=3
  (
    trap '' TERM
    INFERNO_TIMEOUT_MS=$TIMEOUT_MS exec "$LAUNCH" -n "$WORLD" --tag-output --timeout 60 --grace "$grace" -- \
      "$INFER" --model "$WORK/toy" --prompt "$PROMPT" --max-new-tokens 1000 --tp "$TP"
  ) >"$out" 2>&1 &
  local launch_pid=$!

  declare -A pid_of=()
  local deadline=$(($(now_ms) + 10000)) rank pid
  while [ "${#pid_of[@]}" -lt "$WORLD" ] && [ "$(now_ms)" -lt "$deadline" ]; do
    while read -r rank pid; do pid_of[$rank]=$pid; done < <(rank_pids "$launch_pid")
    sleep 0.02
  done
  if [ "${#pid_of[@]}" -lt "$WORLD" ]; then
    fail "$name: only ${#pid_of[@]} of $WORLD ranks started"
    kill -KILL "$launch_pid" "${pid_of[@]}" 2>/dev/null
    wait "$launch_pid"
    return
  fi

  # The leader prints the prompt (one line: it ends with a newline) once the
  # group is formed and generation starts; a fault before that would land in
  # loading or the rendezvous, whose deadline is another matter (under a
  # sanitizer on a busy machine, loading alone can take seconds).
  while ! grep -q "^\[0\] $PROMPT_LINE\$" "$out" && [ "$(now_ms)" -lt $((deadline + 60000)) ]; do sleep 0.02; done
  if ! grep -q "^\[0\] $PROMPT_LINE\$" "$out"; then
    fail "$name: generation did not start within 60 s"
    kill -KILL "$launch_pid" "${pid_of[@]}" 2>/dev/null
    wait "$launch_pid"
    cat "$out" >&2
    return
  fi
  # The fault: at a random point between 0.3 s and 1.3 s into the generation.
  sleep "$(printf '0.%03d' $((300 + RANDOM % 700)))"
  local fault_at
  fault_at=$(now_ms)
  if ! kill -0 "$launch_pid" 2>/dev/null; then
    fail "$name: the job ended before the fault"
    cat "$out" >&2
    return
  fi
  kill "-$signal" "${pid_of[$victim]}"
  echo "$name: SIG$signal to rank $victim (pid ${pid_of[$victim]}) at $((fault_at % 100000)) ms"

  # Each survivor's exit time, polled until all are gone or the bound passed.
  declare -A gone_after=()
  local bound=$((TIMEOUT_MS + SLACK_MS))
  while [ "$(now_ms)" -lt $((fault_at + bound + 1000)) ]; do
    local alive=0
    for ((rank = 0; rank < WORLD; rank++)); do
      [ "$rank" -eq "$victim" ] && continue
      [ -n "${gone_after[$rank]:-}" ] && continue
      if kill -0 "${pid_of[$rank]}" 2>/dev/null; then
        alive=$((alive + 1))
      else
        gone_after[$rank]=$(($(now_ms) - fault_at))
      fi
    done
    [ "$alive" -eq 0 ] && break
    sleep 0.02
  done

  # launch ends the job: SIGKILL to a stopped victim after --grace.
  local waited=0
  while kill -0 "$launch_pid" 2>/dev/null && [ "$waited" -lt 200 ]; do
    sleep 0.05
    waited=$((waited + 1))
  done
  if kill -0 "$launch_pid" 2>/dev/null; then
    fail "$name: launch still running 10 s after the survivors exited"
    kill -KILL "$launch_pid"
  fi
  wait "$launch_pid"
  local status=$?
  [ "$status" -ne 0 ] || fail "$name: launch exited 0"

  for ((rank = 0; rank < WORLD; rank++)); do
    [ "$rank" -eq "$victim" ] && continue
    local took="${gone_after[$rank]:-}"
    if [ -z "$took" ]; then
      fail "$name: rank $rank still running $((bound + 1000)) ms after the fault"
    elif [ "$took" -gt "$bound" ]; then
      fail "$name: rank $rank exited $took ms after the fault (limit $bound ms)"
    fi
    local line
    # The error line ("Kind: ..."), not a progress line ("loading weights: ...").
    line=$(grep -E "^\[$rank\] infer: rank $rank: [A-Za-z]+: " "$out" | head -1)
    if ! echo "$line" | grep -Eq "(PeerLost|Timeout): .*(send|recv|all_reduce|gather|scatter).* rank [0-9]+"; then
      fail "$name: rank $rank: no PeerLost/Timeout naming a rank and an op: '$line'"
    fi
    echo "$line" | grep -q "rank $victim[^0-9]" ||
      fail "$name: rank $rank does not name the victim, rank $victim: '$line'"
    echo "$name: rank $rank exited after ${took:-?} ms: ${line#*: }"
  done

  for ((rank = 0; rank < WORLD; rank++)); do
    if kill -0 "${pid_of[$rank]}" 2>/dev/null; then
      fail "$name: rank $rank (pid ${pid_of[$rank]}) left behind"
      kill -KILL "${pid_of[$rank]}"
    fi
  done
  local leftover
  leftover=$(pgrep -f "$WORK/toy" | tr '\n' ' ')
  if [ -n "$leftover" ]; then
    fail "$name: processes left behind: $leftover"
    kill -KILL $leftover
  fi
  [ "$FAILURES" -eq 0 ] || cat "$out" >&2
}

VICTIMS=(0 $((WORLD - 1)))
[ "$WORLD" -ge 3 ] && VICTIMS+=($((WORLD / 2)))
for victim in "${VICTIMS[@]}"; do
  for signal in KILL STOP; do
    run_case "$signal" "$victim"
  done
done

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS: $WORLD ranks (tp $TP), victims ${VICTIMS[*]}, SIGKILL and SIGSTOP"
