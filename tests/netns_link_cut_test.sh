#!/bin/bash
# Several "hosts": each rank of a 3-rank //tools:infer job runs in its own
# network namespace, joined to the others by a veth pair into a bridge
# namespace, on a private subnet that exists only inside these namespaces.
# Each rank runs under its own `launch --nnodes 3 --node-rank R`.
# 1. A clean run over the namespaces prints the same token ids as one rank,
#    its data between the ranks on the direct TCP data path (the default
#    between hosts of a secured job; the rendezvous logs it).
# 2. Cutting rank 1's link (`ip link set ... down`) mid-generation: every rank
#    exits non-zero with PeerLost or Timeout within INFERNO_TIMEOUT_MS + 3 s
#    (no hang), every launch exits non-zero, and nothing is left running.
# Needs root (CAP_NET_ADMIN); skips with a message otherwise. The namespaces
# are removed by an EXIT trap whatever happens.
#
# Usage: netns_link_cut_test.sh LAUNCH INFER MAKE_TOY_MODEL
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/netns.XXXXXX")"
WORLD=3
TIMEOUT_MS=2000
SLACK_MS=3000
# Names unique to this run; a /24 that only exists inside the namespaces.
ID="inf$$"
SUBNET="10.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))"
BRIDGE_NS="${ID}br"

cleanup() {
  local ns pid
  for ns in "$BRIDGE_NS" "${ID}r0" "${ID}r1" "${ID}r2"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

if ! ip netns add "$BRIDGE_NS" 2>"$WORK/netns.err"; then
  skip "cannot create network namespaces here ($(head -1 "$WORK/netns.err")); run as root outside a sandbox"
fi
ip -n "$BRIDGE_NS" link add br0 type bridge
ip -n "$BRIDGE_NS" link set br0 up
for ((r = 0; r < WORLD; r++)); do
  ns="${ID}r$r"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip link add "${ID}a$r" netns "$ns" type veth peer name "${ID}b$r" netns "$BRIDGE_NS"
  ip -n "$ns" addr add "$SUBNET.$((r + 1))/24" dev "${ID}a$r"
  ip -n "$ns" link set "${ID}a$r" up
  ip -n "$BRIDGE_NS" link set "${ID}b$r" master br0
  ip -n "$BRIDGE_NS" link set "${ID}b$r" up
done
if ip -4 addr show | grep -q "inet $SUBNET\."; then
  echo "FAIL: $SUBNET.0/24 exists outside the namespaces" >&2
  exit 1
fi

"$MAKE_TOY" --out "$WORK/toy" --dim 384 --layers 4 --seq-len 1024 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
MASTER_PORT=$((20000 + RANDOM % 20000))  # free: nothing else runs in these namespaces
# One secret for the launches of every node, as a multi-node job needs.
INFERNO_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export INFERNO_JOB_SECRET

# start_job NAME MAX_NEW_TOKENS INFER_ARGS...: starts one launch per namespace
# in the background; leaves their pids in LAUNCH_PIDS.
start_job() {
  local name="$1" tokens="$2"
  shift 2
  LAUNCH_PIDS=()
  MASTER_PORT=$((MASTER_PORT + 1))
  for ((r = 0; r < WORLD; r++)); do
    (
      trap '' TERM
      INFERNO_TIMEOUT_MS=$TIMEOUT_MS exec ip netns exec "${ID}r$r" "$LAUNCH" -n 1 --nnodes $WORLD --node-rank $r \
        --master-addr "$SUBNET.1" --master-port $MASTER_PORT --timeout 60 --grace 2 -- \
        "$INFER" --model "$WORK/toy" --max-new-tokens "$tokens" "$@"
    ) >"$WORK/$name.$r.out" 2>"$WORK/$name.$r.err" &
    LAUNCH_PIDS+=($!)
  done
}

# 1. Clean run across the namespaces vs one rank.
"$INFER" --model "$WORK/toy" --prompt "Once upon a time" --max-new-tokens 64 --output ids >"$WORK/alone.ids" 2>/dev/null
start_job clean 64 --prompt "Once upon a time" --output ids
for ((r = 0; r < WORLD; r++)); do
  wait "${LAUNCH_PIDS[$r]}" || { fail "clean run: node $r exited $?"; cat "$WORK/clean.$r.err" >&2; }
done
for ((r = 0; r < WORLD; r++)); do
  grep -q "rank $r: data to rank(s) .* over the direct TCP data path" "$WORK/clean.$r.err" ||
    fail "clean run: rank $r did not use the direct TCP data path (see its log: $(grep -c . "$WORK/clean.$r.err") lines)"
done
if [ ! -s "$WORK/alone.ids" ] || ! cmp -s "$WORK/alone.ids" "$WORK/clean.0.out"; then
  fail "clean run over the namespaces printed '$(cat "$WORK/clean.0.out")', one rank printed '$(cat "$WORK/alone.ids")'"
fi

# 2. Cut rank 1's link mid-generation: once the leader has printed the prompt
# (a line of its own: generation has started; under a sanitizer on a busy
# machine, loading alone can take seconds), at a random point 0.3-0.8 s later.
start_job cut 1000 --prompt "Once upon a time
"
started=$(now_ms)
while ! grep -qx "Once upon a time" "$WORK/cut.0.out" 2>/dev/null && [ "$(now_ms)" -lt $((started + 60000)) ]; do
  sleep 0.02
done
grep -qx "Once upon a time" "$WORK/cut.0.out" || fail "generation did not start within 60 s"
sleep "$(printf '0.%03d' $((300 + RANDOM % 500)))"
for ((r = 0; r < WORLD; r++)); do
  kill -0 "${LAUNCH_PIDS[$r]}" 2>/dev/null || fail "node $r ended before the cut"
done
cut_at=$(now_ms)
ip -n "$BRIDGE_NS" link set "${ID}b1" down
echo "cut rank 1's link at $((cut_at % 100000)) ms"
declare -A gone_after=()
while [ "$(now_ms)" -lt $((cut_at + TIMEOUT_MS + SLACK_MS + 2000)) ]; do
  alive=0
  for ((r = 0; r < WORLD; r++)); do
    [ -n "${gone_after[$r]:-}" ] && continue
    if kill -0 "${LAUNCH_PIDS[$r]}" 2>/dev/null; then
      alive=$((alive + 1))
    else
      gone_after[$r]=$(($(now_ms) - cut_at))
    fi
  done
  [ "$alive" -eq 0 ] && break
  sleep 0.05
done
for ((r = 0; r < WORLD; r++)); do
  took="${gone_after[$r]:-}"
  if [ -z "$took" ]; then
    fail "node $r still running $((TIMEOUT_MS + SLACK_MS + 2000)) ms after the cut"
    kill -KILL "${LAUNCH_PIDS[$r]}"
  elif [ "$took" -gt $((TIMEOUT_MS + SLACK_MS)) ]; then
    fail "node $r exited $took ms after the cut (limit $((TIMEOUT_MS + SLACK_MS)) ms)"
  fi
  wait "${LAUNCH_PIDS[$r]}"
  status=$?
  [ "$status" -ne 0 ] || fail "node $r: launch exited 0 after the cut"
  line=$(grep "^infer: rank $r: " "$WORK/cut.$r.err" | head -1)
  echo "node $r exited after ${took:-?} ms with status $status: $line"
  echo "$line" | grep -Eq "(PeerLost|Timeout): " || fail "rank $r: not PeerLost/Timeout: '$line'"
  leftover=$(ip netns pids "${ID}r$r")
  [ -z "$leftover" ] || fail "processes left in ${ID}r$r: $leftover"
done

[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS: ranks in 3 namespaces; a cut link gave PeerLost/Timeout on every rank"
