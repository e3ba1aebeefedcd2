#!/bin/bash
# infer --failover on 3 ranks (three pipeline stages) under launch
# --failover, 4 greedy prompts micro-batched: rank VICTIM (1 or 2, at random
# unless set) is SIGKILLed in the middle of a forward pass (it stops there
# through INFERNO_TEST_ONLY_HANG, runtime/test_only_hang.h, set for it alone,
# and the test kills it as soon as it says so):
# - without a standby, the survivors go on as 2 ranks (two stages);
# - with launch --standby 1, the standby takes the victim's place: 3 ranks;
# either way every prompt's ids are those of an undisturbed run, rank 0
# reports the new generation, launch exits 0, no process is left running and
# nothing new is left in /dev/shm.
# GRID: infer's grid flags (e.g. "--tp 3"; none: three pipeline stages);
# rank 0 must report generation 1's grid as GRID_AFTER without the standby
# and GRID_STANDBY with it (the job's own). SAME_WITHOUT_STANDBY=0: the
# re-plan without a standby changes the tensor-parallel degree, so the
# all-reduce sums in another order and greedy ids are not guaranteed: every
# prompt must still complete, with at most --max-new-tokens ids, and start
# with the undisturbed run's ids up to the tokens rank 0 kept at the loss
# (its "tokens kept" line); how many prompts are identical is reported.
# RANKS: the job's ranks (default 3; the victim is one of 1 to RANKS - 1).
# TOY_FLAGS: the model's shape (make_toy_model's flags); HANG_STEP: the
# forward pass the victim hangs at.
#
# Usage: infer_failover_test.sh LAUNCH INFER MAKE_TOY_MODEL
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_failover.XXXXXX")"
RANKS=${RANKS:-3}
VICTIM=${VICTIM:-$((1 + RANDOM % (RANKS - 1)))}
HANG_STEP=${HANG_STEP:-20}
export INFERNO_TIMEOUT_MS=5000
SHM_BEFORE="$(ls /dev/shm | sort)"
read -r -a TOY_FLAGS <<<"${TOY_FLAGS:---dim 128 --layers 6 --seq-len 512 --vocab 2000}"
read -r -a GRID <<<"${GRID:-}"
GRID_AFTER=${GRID_AFTER:-2 stages x 1 tensor-parallel}
GRID_STANDBY=${GRID_STANDBY:-3 stages x 1 tensor-parallel}
SAME_WITHOUT_STANDBY=${SAME_WITHOUT_STANDBY:-1}
"$MAKE_TOY" --out "$WORK/toy" "${TOY_FLAGS[@]}" >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
INFER_ARGS=("${GRID[@]}" --model "$WORK/toy" --tokenizer byte-level --max-new-tokens 60 --output ids
  --prompt-ids "1 72 101 108" --prompt-ids "1 87 111 114 108 100" --prompt-ids "1 65" --prompt-ids "1 90 90 90")
# Rank VICTIM alone hangs at forward pass HANG_STEP (a standby, with no RANK, never does).
cat >"$WORK/victim.sh" <<EOS
#!/bin/sh
[ "\${RANK:-}" = "$VICTIM" ] && export INFERNO_TEST_ONLY_HANG="$VICTIM:$HANG_STEP"
exec "\$@"
EOS
chmod +x "$WORK/victim.sh"

timeout 60 "$LAUNCH" -n "$RANKS" -- "$INFER" "${INFER_ARGS[@]}" >"$WORK/undisturbed.ids" 2>"$WORK/undisturbed.err" ||
  { cat "$WORK/undisturbed.err" >&2; echo "FAIL: the undisturbed run" >&2; exit 1; }
[ "$(wc -l <"$WORK/undisturbed.ids")" -eq 4 ] || fail "the undisturbed run printed: $(cat "$WORK/undisturbed.ids")"

# run_failover NAME STANDBYS [SAME]: the job with the victim's fault; checks
# as above (SAME=0: the ids as SAME_WITHOUT_STANDBY=0 says).
run_failover() {
  local name="$1" standbys="$2" same="${3:-1}" out="$WORK/$1.out" err="$WORK/$1.err"
  "$LAUNCH" -n "$RANKS" --failover --standby "$standbys" --grace 2 --tag-output -- "$WORK/victim.sh" \
    "$INFER" --failover "${INFER_ARGS[@]}" >"$out" 2>"$err" &
  local launch_pid=$! pids=() victim_pid="" deadline=$(($(now_ms) + 40000))
  while [ "$(now_ms)" -lt "$deadline" ] && kill -0 "$launch_pid" 2>/dev/null; do
    if [ -z "$victim_pid" ] && grep -q "^\[$VICTIM\] rank $VICTIM: INFERNO_TEST_ONLY_HANG: hanging" "$err"; then
      local rank
      for ((rank = 0; rank < RANKS; ++rank)); do pids+=("$(rank_pid "$launch_pid" "$rank")"); done
      [ "$standbys" -gt 0 ] && pids+=("$(rank_pid "$launch_pid" 0 INFERNO_STANDBY)")
      victim_pid="${pids[$VICTIM]}"
      [ -n "$victim_pid" ] && kill -KILL "$victim_pid"
    fi
    sleep 0.02
  done
  kill -0 "$launch_pid" 2>/dev/null && { fail "$name: launch still runs 40 s on"; kill -KILL "$launch_pid"; }
  wait "$launch_pid"
  local status=$?
  [ "$status" -eq 0 ] || { cat "$err" >&2; fail "$name: launch exited $status"; }
  [ -n "$victim_pid" ] || fail "$name: rank $VICTIM never reached forward pass $HANG_STEP"
  # --tag-output prefixes rank 0's lines with "[0] ".
  sed -n 's/^\[0\] //p' "$out" >"$WORK/$name.ids"
  if [ "$same" = 1 ]; then
    cmp -s "$WORK/$name.ids" "$WORK/undisturbed.ids" ||
      fail "$name: the ids differ from the undisturbed run: $(cat "$out")"
  else
    local kept
    kept="$(sed -n 's/^\[0\] infer: rank 0: generation 1: .*(tokens kept: \(.*\))$/\1/p' "$err")"
    python3 - "$WORK/undisturbed.ids" "$WORK/$name.ids" "$kept" "$name" <<'PY' || fail "$name: the ids across the failover"
import sys
before = [line.split() for line in open(sys.argv[1])]
after = [line.split() for line in open(sys.argv[2])]
kept = [int(n) for n in sys.argv[3].split(", ")]
assert len(after) == len(before) == len(kept), ("prompts", len(before), len(after), sys.argv[3])
assert any(0 < k < len(b) for k, b in zip(kept, before)), ("the loss came at no prompt's middle", kept)
for i, (a, b, k) in enumerate(zip(before, after, kept)):
    assert 0 < len(b) <= 60, ("prompt %d has %d ids" % (i, len(b)))
    assert b[:k] == a[:k], ("prompt %d differs before the loss" % i, k, a, b)
print("%s: %d/%d prompts identical; tokens kept at the loss: %s"
      % (sys.argv[4], sum(a == b for a, b in zip(before, after)), len(before), sys.argv[3]))
PY
  fi
  local pid
  for pid in "${pids[@]}"; do
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && { fail "$name: pid $pid left running"; kill -KILL "$pid"; }
  done
  grep "infer: rank 0: generation 1" "$err"
}

run_failover survivors 0 "$SAME_WITHOUT_STANDBY"
grep -q "^\[0\] infer: rank 0: generation 1: $((RANKS - 1)) ranks (0 standby" "$WORK/survivors.err" ||
  fail "survivors: rank 0 did not go on as $((RANKS - 1)) ranks: $(grep infer: "$WORK/survivors.err")"
grep -q "^\[0\] infer: rank 0: generation 1 formed over $((RANKS - 1)) ranks ($GRID_AFTER ranks)" "$WORK/survivors.err" ||
  fail "survivors: generation 1 is not $GRID_AFTER: $(grep infer: "$WORK/survivors.err")"
run_failover standby 1
grep -q "^\[0\] infer: rank 0: generation 1: $RANKS ranks (1 standby" "$WORK/standby.err" ||
  fail "standby: rank 0 did not go on as $RANKS ranks: $(grep infer: "$WORK/standby.err")"
grep -q "^\[0\] infer: rank 0: generation 1 formed over $RANKS ranks ($GRID_STANDBY ranks)" "$WORK/standby.err" ||
  fail "standby: generation 1 is not $GRID_STANDBY: $(grep infer: "$WORK/standby.err")"
grep -q "infer: standby rank 0 takes rank $VICTIM's place in generation 1" "$WORK/standby.err" ||
  fail "standby: the standby did not take rank $VICTIM's place: $(grep infer: "$WORK/standby.err")"

SHM_AFTER="$(ls /dev/shm | sort)"
LEFT_IN_SHM="$(comm -13 <(echo "$SHM_BEFORE") <(echo "$SHM_AFTER"))"
[ -z "$LEFT_IN_SHM" ] || fail "left in /dev/shm: $LEFT_IN_SHM"
[ "$FAILURES" -eq 0 ] || exit 1
rm -rf "$WORK"
echo "PASS: victim rank $VICTIM"
