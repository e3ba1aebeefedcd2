#!/bin/bash
# Two-level tensor-parallel sums across "hosts": //tools:infer --tp 4 on two
# network namespaces (tools/netns_hosts.sh, unshaped links) with two ranks
# each, one `launch -n 2 --nnodes 2` per host, secured (a job secret):
# 1. f32: every rank logs two-level sums (within each host, then across 2
#    hosts), and the tokens and every step's logits are the 1-rank run's
#    (logits within 1e-5 of the largest; tests/compare_logits.py).
# 2. --sync-dtype q8_0: every rank logs the sums across hosts in q8_0; the
#    logits are within 0.15 of the 1-rank run's (as far as the tokens agree)
#    and not the f32 run's bits: the sums between the hosts were rounded.
# After each job no process is left in the namespaces; nothing is left in
# /dev/shm. Needs root (CAP_NET_ADMIN); skips with a message otherwise. The
# namespaces, what runs in them and the work directory are removed by an
# EXIT trap whatever happens.
#
# Usage: netns_two_level_test.sh LAUNCH INFER MAKE_TOY_MODEL FRAME_DELAY_RELAY COMPARE_LOGITS
set -u
source tests/test_lib.sh
source tools/netns_hosts.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" RELAY="$4" COMPARE_LOGITS="$5"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/netns_two_level.XXXXXX")"
SHM_BEFORE="$(ls /dev/shm | sort)"
TOKENS=40
PROMPT=(--prompt-ids "1 79 111 99 101 32 117 112 111 110")
trap 'netns_hosts_down; rm -rf "$WORK"' EXIT

netns_hosts_up "$RELAY" 2 0 0
case $? in
  0) ;;
  1) skip "$NETNS_HOSTS_ERROR" ;;
  *) echo "FAIL: $NETNS_HOSTS_ERROR" >&2; exit 1 ;;
esac
"$MAKE_TOY" --out "$WORK/toy" --layers 4 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
INFERNO_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export INFERNO_JOB_SECRET
MASTER_PORT=$((20000 + RANDOM % 20000))  # free: nothing else runs in these namespaces

# across NAME INFER_ARGS...: infer --tp 4 on 2 hosts x 2 ranks, $TOKENS
# greedy tokens, logits to $WORK/NAME.logits; host H's launch output in
# $WORK/NAME.H.out and .err (rank 0's ids in NAME.0.out, copied to
# NAME.ids). Returns 1 (a failed check) when a launch fails.
across() {
  local name="$1" h pids=() status=0
  shift
  MASTER_PORT=$((MASTER_PORT + 1))
  for h in 0 1; do
    ip netns exec "${NETNS_HOSTS_NS[$h]}" timeout 120 "$LAUNCH" -n 2 --nnodes 2 --node-rank $h \
      --master-addr "${NETNS_HOSTS_ADDR[0]}" --master-port $MASTER_PORT --timeout 100 --grace 2 -- \
      "$INFER" --model "$WORK/toy" --tp 4 --threads 1 "${PROMPT[@]}" --max-new-tokens $TOKENS --output ids \
      --dump-logits "$WORK/$name.logits" "$@" >"$WORK/$name.$h.out" 2>"$WORK/$name.$h.err" &
    pids+=($!)
  done
  for h in 0 1; do
    wait "${pids[$h]}" || { status=1; fail "$name: host $h's launch failed: $(tail -2 "$WORK/$name.$h.err")"; }
  done
  for h in 0 1; do
    local left
    left=$(ip netns pids "${NETNS_HOSTS_NS[$h]}")
    [ -z "$left" ] || fail "$name: processes left on host $h: $left"
  done
  cp "$WORK/$name.0.out" "$WORK/$name.ids"
  return $status
}

# logged NAME TEXT: each host's two ranks logged TEXT (a grep -E pattern).
logged() {
  local h
  for h in 0 1; do
    [ "$(grep -cE "$2" "$WORK/$1.$h.err")" -eq 2 ] ||
      fail "$1: host $h's two ranks did not both log '$2' ($(grep -cE "$2" "$WORK/$1.$h.err") did)"
  done
}

# compare NAME TOLERANCE: NAME against the 1-rank run (compare_logits.py).
compare() {
  local verdict
  verdict=$(python3 "$COMPARE_LOGITS" "$WORK/alone" "$WORK/$1" "$VOCAB" "$2" "$TOKENS")
  echo "$1: $verdict"
  case "$verdict" in ok*) ;; *) fail "$1: $verdict" ;; esac
}

timeout 60 "$INFER" --model "$WORK/toy" "${PROMPT[@]}" --max-new-tokens $TOKENS --output ids \
  --dump-logits "$WORK/alone.logits" >"$WORK/alone.ids" 2>"$WORK/alone.err" ||
  { echo "FAIL: one rank: $(tail -1 "$WORK/alone.err")" >&2; exit 1; }
VOCAB=$(grep -o 'classifier rows \[0, [0-9]*)' "$WORK/alone.err" | head -1 | tr -dc '0-9 ' | awk '{print $2}')

# 1. f32: two levels, one rank's tokens and logits.
if across f32; then
  logged f32 "tensor-parallel sums in two levels, within each host, then across 2 hosts in f32"
  logged f32 "data to rank\(s\) .* over the direct TCP data path"
  cmp -s "$WORK/alone.ids" "$WORK/f32.ids" ||
    fail "f32: printed '$(tr '\n' ' ' <"$WORK/f32.ids")', one rank '$(tr '\n' ' ' <"$WORK/alone.ids")'"
  compare f32 1e-5
fi

# 2. q8_0 between the hosts only.
if across q8_0 --sync-dtype q8_0; then
  logged q8_0 "tensor-parallel sums in two levels, within each host, then across 2 hosts in q8_0"
  compare q8_0 0.15
  ! cmp -s "$WORK/f32.logits" "$WORK/q8_0.logits" || fail "q8_0: the f32 run's logits bit for bit: nothing rounded"
fi

LEFT_IN_SHM="$(comm -13 <(echo "$SHM_BEFORE") <(ls /dev/shm | sort))"
[ -z "$LEFT_IN_SHM" ] || fail "left in /dev/shm: $LEFT_IN_SHM"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS: infer --tp 4 on 2 namespace hosts x 2 ranks: two-level f32 sums as one rank; q8_0 only between hosts"
