#!/bin/bash
# tools/netns_hosts.sh applies the round-trip time and the link rate it is
# given: between two namespace hosts, a 64-byte TCP ping-pong (tcp_probe) at
# RTT_US=1000 takes 1000 µs more than at RTT_US=0, within -10%/+700 µs (the
# relay's and the VM's wake-ups add tens to hundreds of µs on a busy machine),
# and a bulk TCP stream on a 100 Mbit/s link runs at 80-105 Mbit/s.
# Needs root (CAP_NET_ADMIN); skips with a message otherwise. The namespaces
# and the relay are removed by an EXIT trap whatever happens.
#
# Usage: netns_hosts_test.sh FRAME_DELAY_RELAY TCP_PROBE
set -u
source tests/test_lib.sh
source tools/netns_hosts.sh
RELAY="$1" PROBE="$2"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/netns_hosts.XXXXXX")"
trap 'netns_hosts_down; rm -rf "$WORK"' EXIT

# probe RATE_MBIT RTT_US ARGS...: a fresh pair of hosts, tcp_probe served on
# host 1 and run on host 0 with ARGS; prints the client's line.
probe() {
  local rate="$1" rtt="$2" port
  shift 2
  netns_hosts_up "$RELAY" 2 "$rate" "$rtt"
  case $? in
    0) ;;
    1) skip "$NETNS_HOSTS_ERROR" ;;
    *) fail "$NETNS_HOSTS_ERROR"; return ;;
  esac
  ip netns exec "${NETNS_HOSTS_NS[1]}" "$PROBE" --listen 0 >"$WORK/port" 2>&1 &
  for _ in $(seq 50); do grep -q '^port ' "$WORK/port" && break; sleep 0.1; done
  port=$(awk '/^port /{print $2}' "$WORK/port")
  ip netns exec "${NETNS_HOSTS_NS[0]}" timeout 20 "$PROBE" --connect "${NETNS_HOSTS_ADDR[1]}:$port" "$@" ||
    fail "tcp_probe $* over $rate Mbit/s, $rtt µs failed"
  netns_hosts_down
}

base=$(probe 0 0 --size 64 --iters 300 | sed -n 's/.*median=\([0-9.]*\).*/\1/p')
slow=$(probe 0 1000 --size 64 --iters 300 | sed -n 's/.*median=\([0-9.]*\).*/\1/p')
rate=$(probe 100 0 --bulk-seconds 2 | sed -n 's/.*mbit_s=\([0-9.]*\).*/\1/p')
echo "round trip: ${base} µs unshaped, ${slow} µs with RTT_US=1000; bulk on 100 Mbit/s: ${rate} Mbit/s"
if [ -z "$base" ] || [ -z "$slow" ] || [ -z "$rate" ]; then
  fail "a measurement printed nothing"
else
  added=$(awk -v a="$slow" -v b="$base" 'BEGIN{print int(a - b)}')
  [ "$added" -ge 900 ] && [ "$added" -le 1700 ] || fail "RTT_US=1000 added $added µs to the round trip (want 900-1700)"
  awk -v r="$rate" 'BEGIN{exit !(r >= 80 && r <= 105)}' || fail "bulk TCP ran at $rate Mbit/s on a 100 Mbit/s link"
fi
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS: the harness's round trip and rate are applied"
