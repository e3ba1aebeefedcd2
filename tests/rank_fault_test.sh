#!/bin/bash
# One rank of a pipeline-parallel //tools:infer generation (toy model, under
# //tools:launch, INFERNO_TIMEOUT_MS left at its default of 60 s) is
# SIGKILLed or SIGSTOPped at a random point, or hangs: its generator thread
# blocks forever at a random forward pass (the test-only hook
# INFERNO_TEST_ONLY_HANG, runtime/test_only_hang.h) while the rest of the
# process runs on. For each victim (the first stage W-1, a middle stage, the
# leader 0, which is also the last stage) and each fault:
# - every surviving rank prints its error within BOUND_MS of the fault (the
#   issue's 3 s: liveness heartbeats, not the op timeout, find a stopped or
#   hung rank; a killed one is found by its closed connection or pidfd), and
#   exits on its own, non-zero, with one "infer: rank R: ..." line that is a
#   PeerLost or Timeout naming a peer rank and the op (send/recv, or the
#   tensor-parallel all_reduce/all_gather); the times are printed;
# - every survivor names the victim: each watches every peer's heartbeats,
#   and the first to notice the loss also sends the others an abort notice
#   quoting its error;
# - launch exits non-zero, and no process of the job is left behind, nor in
#   /dev/shm (the test SIGKILLs a stopped or hung victim once the survivors
#   have exited, instead of waiting out launch's --grace).
# The survivors inherit SIGTERM as ignored, so launch's SIGTERM cannot end them:
# they must notice the loss themselves.
# With TP > 1 the grid is WORLD/TP stages of TP tensor-parallel ranks, whose
# all_reduces are where most survivors wait when the victim goes. With
# PARALLEL=ep the model is a mixture of experts (Qwen3-MoE layout) and the
# stage's TP ranks are expert-parallel (--ep TP): each victim holds experts.
#
# The time of a fault is taken just before the signal (or, for a hang, the
# time the hook prints as it blocks), and a survivor's time is when its
# error line reached launch's output (polled every 20 ms), so the bound is
# met on a loaded machine as long as the survivors' liveness is.
#
# Usage: rank_fault_test.sh LAUNCH INFER MAKE_TOY_MODEL WORLD [TP [TRANSPORT [PARALLEL]]]
# TRANSPORT: INFERNO_TRANSPORT (auto, the default: shared memory on one host;
# tcp: ZeroMQ over tcp:// as between hosts; zmq: ZeroMQ over ipc://).
# PARALLEL: tp (the default) or ep.
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" WORLD="$4" TP="${5:-1}" TRANSPORT="${6:-auto}" PARALLEL="${7:-tp}"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/rank_fault.XXXXXX")"
BOUND_MS=3000
SHM_BEFORE="$(ls /dev/shm | sort)"
PROMPT_LINE="Once upon a time"
PROMPT="$PROMPT_LINE
"

# A generation of several seconds even on an idle machine (dim 384: a 1000-token
# run of the default dim-64 model ends in under a second), so that the fault
# lands mid-decode.
MOE=()
[ "$PARALLEL" = ep ] && MOE=(--architecture qwen3_moe --kv-heads 2 --experts 6 --experts-per-token 2)
"$MAKE_TOY" --out "$WORK/toy" --dim 384 --layers 4 --seq-len 1024 "${MOE[@]}" >/dev/null ||
  { echo "FAIL: make_toy_model" >&2; exit 1; }

# rank_pids LAUNCH_PID: prints "rank pid" for every child of launch.
rank_pids() {
  local pid
  for pid in $(pgrep -P "$1"); do
    local rank
    rank=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^RANK=//p')
    [ -n "$rank" ] && echo "$rank $pid"
  done
}

# run_case FAULT VICTIM: FAULT is KILL, STOP or HANG.
run_case() {
  local fault="$1" victim="$2"
  local name="$fault-rank$victim-of$WORLD-$PARALLEL$TP-$TRANSPORT"
  local out="$WORK/$name.out" hang=""
  # A forward pass of the victim's well inside the 1000-token generation.
  [ "$fault" = HANG ] && hang="$victim:$((20 + RANDOM % 40))"
  (
    trap '' TERM
    unset INFERNO_TIMEOUT_MS
    export INFERNO_TRANSPORT="$TRANSPORT"
    [ -n "$hang" ] && export INFERNO_TEST_ONLY_HANG="$hang"
    exec "$LAUNCH" -n "$WORLD" --tag-output --timeout 60 --grace 3 -- \
      "$INFER" --model "$WORK/toy" --prompt "$PROMPT" --max-new-tokens 1000 "--$PARALLEL" "$TP"
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
  local fault_at
  if [ "$fault" = HANG ]; then
    # The hook prints the time it blocks at: "rank R: INFERNO_TEST_ONLY_HANG:
    # hanging at forward pass S at <ms since the epoch>".
    local hang_line=""
    while [ -z "$hang_line" ] && kill -0 "$launch_pid" 2>/dev/null && [ "$(now_ms)" -lt $((deadline + 120000)) ]; do
      hang_line=$(grep -m1 "^\[$victim\] rank $victim: INFERNO_TEST_ONLY_HANG: hanging at forward pass" "$out")
      sleep 0.02
    done
    if [ -z "$hang_line" ]; then
      fail "$name: rank $victim never reached forward pass ${hang#*:}"
      kill -KILL "$launch_pid" "${pid_of[@]}" 2>/dev/null
      wait "$launch_pid"
      cat "$out" >&2
      return
    fi
    fault_at=${hang_line##* at }
    echo "$name: rank $victim (pid ${pid_of[$victim]}) hangs at forward pass ${hang#*:} at $((fault_at % 100000)) ms"
  else
    # The fault: at a random point between 0.3 s and 1.3 s into the generation.
    sleep "$(printf '0.%03d' $((300 + RANDOM % 700)))"
    fault_at=$(now_ms)
    if ! kill -0 "$launch_pid" 2>/dev/null; then
      fail "$name: the job ended before the fault"
      cat "$out" >&2
      return
    fi
    kill "-$fault" "${pid_of[$victim]}"
    echo "$name: SIG$fault to rank $victim (pid ${pid_of[$victim]}) at $((fault_at % 100000)) ms"
  fi

  # Each survivor's error line and exit, polled until all have exited or
  # twice the bound passed.
  declare -A named_after=() gone_after=()
  while [ "$(now_ms)" -lt $((fault_at + 2 * BOUND_MS)) ]; do
    local alive=0
    for ((rank = 0; rank < WORLD; rank++)); do
      [ "$rank" -eq "$victim" ] && continue
      if [ -z "${named_after[$rank]:-}" ] && grep -Eq "^\[$rank\] infer: rank $rank: [A-Za-z]+: " "$out"; then
        named_after[$rank]=$(($(now_ms) - fault_at))
      fi
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

  # Once every survivor has exited on its own, a stopped or hung victim is
  # all that keeps the job: the test SIGKILLs it rather than wait out launch's
  # --grace (3 s from the first survivor's exit; //tools:launch_test covers
  # the SIGKILL after the grace). The grace stays 3 s, not shorter: launch
  # SIGKILLs a survivor still running when it ends, which would cut the
  # survivors' BOUND_MS short. If a survivor is still running, launch's grace
  # ends the job as before.
  if [ "$fault" != KILL ] && [ "${alive:-1}" -eq 0 ]; then
    kill -KILL "${pid_of[$victim]}" 2>/dev/null
  fi
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
    local named="${named_after[$rank]:-}" gone="${gone_after[$rank]:-}"
    if [ -z "$named" ]; then
      fail "$name: rank $rank printed no error within $((2 * BOUND_MS)) ms of the fault"
    elif [ "$named" -gt "$BOUND_MS" ]; then
      fail "$name: rank $rank printed its error $named ms after the fault (limit $BOUND_MS ms)"
    fi
    [ -n "$gone" ] || fail "$name: rank $rank still running $((2 * BOUND_MS)) ms after the fault"
    local line
    # The error line ("Kind: ..."), not a progress line ("loading weights: ...").
    line=$(grep -E "^\[$rank\] infer: rank $rank: [A-Za-z]+: " "$out" | head -1)
    if ! echo "$line" | grep -Eq "(PeerLost|Timeout): .*(send|recv|all_reduce|gather|scatter).* rank [0-9]+"; then
      fail "$name: rank $rank: no PeerLost/Timeout naming a rank and an op: '$line'"
    fi
    echo "$line" | grep -q "rank $victim[^0-9]" ||
      fail "$name: rank $rank does not name the victim, rank $victim: '$line'"
    echo "$name: rank $rank named it after ${named:-?} ms, exited after ${gone:-?} ms: ${line#*: }"
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
  for fault in KILL STOP HANG; do
    run_case "$fault" "$victim"
  done
done

SHM_AFTER="$(ls /dev/shm | sort)"
LEFT_IN_SHM="$(comm -13 <(echo "$SHM_BEFORE") <(echo "$SHM_AFTER"))"
[ -z "$LEFT_IN_SHM" ] || fail "left in /dev/shm: $LEFT_IN_SHM"
rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS: $WORLD ranks ($PARALLEL $TP, $TRANSPORT), victims ${VICTIMS[*]}, SIGKILL, SIGSTOP and a hung generator thread"
