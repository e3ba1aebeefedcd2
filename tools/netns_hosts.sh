# shellcheck shell=bash
# Several "hosts" on this machine, for tests and benchmarks: one network
# namespace per host, each joined by a veth pair to a middle namespace where
# //tools:frame_delay_relay switches the frames and holds each for half the
# round-trip time (this kernel has no netem). Each host's egress is shaped to
# the link rate with `tc tbf`, so every host has a full-duplex link of that
# rate; a round trip crosses the relay twice.
#
#   source tools/netns_hosts.sh
#   netns_hosts_up RELAY N RATE_MBIT RTT_US || skip "$NETNS_HOSTS_ERROR"
#   ip netns exec "${NETNS_HOSTS_NS[0]}" CMD ... "${NETNS_HOSTS_ADDR[1]}" ...
#   netns_hosts_down          (call it from the script's EXIT trap)
#
# RATE_MBIT 0 leaves the links unshaped; RTT_US is the round trip the relay
# adds (0-2000000), on top of what the kernel and the relay's wake-ups cost
# (tens of µs here). The hosts get PREFIX.1 ... PREFIX.N on a /24 that exists
# only inside the namespaces. NETNS_HOSTS_RELAY_LOG, when set, names a file
# that keeps the relay's stderr (netns_hosts_down then stops it with SIGTERM
# first, so it writes its frame counts there). Needs root (CAP_NET_ADMIN).

NETNS_HOSTS_NS=()
NETNS_HOSTS_ADDR=()
NETNS_HOSTS_MIDDLE=""
NETNS_HOSTS_RELAY_PID=""
NETNS_HOSTS_ERROR=""
PATH="$PATH:/usr/sbin:/sbin"  # ip and tc, also under Bazel's test PATH

# netns_hosts_up RELAY N RATE_MBIT RTT_US: makes the hosts; returns 1 with
# NETNS_HOSTS_ERROR set when namespaces cannot be made here (no root, a
# sandbox), 2 on a bad argument or a failed step (also in NETNS_HOSTS_ERROR;
# what it had made is removed). Hosts already up are an error: one set at a
# time.
netns_hosts_up() {
  local relay="$1" hosts="$2" rate_mbit="$3" rtt_us="$4"
  local id="nh$$x$RANDOM" subnet="10.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))" i ns ifaces=""
  if [ -n "$NETNS_HOSTS_MIDDLE" ]; then
    NETNS_HOSTS_ERROR="netns_hosts_up: hosts are already up; call netns_hosts_down first"
    return 2
  fi
  if ! [[ "$hosts" =~ ^[0-9]+$ && "$hosts" -ge 2 && "$hosts" -le 64 ]]; then
    NETNS_HOSTS_ERROR="netns_hosts_up: N '$hosts': give 2-64 hosts"
    return 2
  fi
  if ! [[ "$rate_mbit" =~ ^[0-9]+$ && "$rtt_us" =~ ^[0-9]+$ && "$rtt_us" -le 2000000 ]]; then
    NETNS_HOSTS_ERROR="netns_hosts_up: RATE_MBIT '$rate_mbit' and RTT_US '$rtt_us' must be whole numbers, RTT_US <= 2000000"
    return 2
  fi
  NETNS_HOSTS_MIDDLE="${id}m"
  if ! NETNS_HOSTS_ERROR=$(ip netns add "$NETNS_HOSTS_MIDDLE" 2>&1); then
    NETNS_HOSTS_ERROR="cannot create network namespaces here (${NETNS_HOSTS_ERROR}); run as root outside a sandbox"
    NETNS_HOSTS_MIDDLE=""
    return 1
  fi
  _netns_hosts_quiet "$NETNS_HOSTS_MIDDLE"
  for ((i = 0; i < hosts; i++)); do
    ns="${id}h$i"
    NETNS_HOSTS_NS+=("$ns")
    NETNS_HOSTS_ADDR+=("$subnet.$((i + 1))")
    ip netns add "$ns" && _netns_hosts_quiet "$ns" &&
      ip link add "${id}a$i" netns "$ns" type veth peer name "${id}p$i" netns "$NETNS_HOSTS_MIDDLE" &&
      ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev "${id}a$i" &&
      ip -n "$ns" link set "${id}a$i" up &&
      ip -n "$NETNS_HOSTS_MIDDLE" link set "${id}p$i" up ||
      { NETNS_HOSTS_ERROR="netns_hosts_up: could not make host $i ($ns)"; netns_hosts_down; return 2; }
    if [ "$rate_mbit" -gt 0 ]; then
      # A burst of 1 ms at the rate, at least two 64 KiB GSO frames: a message
      # shorter than the burst leaves at once (a smaller burst starves bulk
      # TCP on this VM: 190 Mbit/s of 1000 measured with 3 KB).
      local burst=$((rate_mbit * 125 > 131072 ? rate_mbit * 125 : 131072))
      tc -n "$ns" qdisc add dev "${id}a$i" root tbf rate "${rate_mbit}mbit" burst "$burst" latency 20ms ||
        { NETNS_HOSTS_ERROR="netns_hosts_up: tc tbf on $ns failed"; netns_hosts_down; return 2; }
    fi
    ifaces="$ifaces${ifaces:+,}${id}p$i"
  done
  local relay_log="${NETNS_HOSTS_RELAY_LOG:-${TMPDIR:-/tmp}/$id.relay.err}"
  ip netns exec "$NETNS_HOSTS_MIDDLE" chrt -f 10 "$relay" --ifaces "$ifaces" --delay-us $((rtt_us / 2)) \
    2>"$relay_log" &
  NETNS_HOSTS_RELAY_PID=$!
  sleep 0.2
  if ! kill -0 "$NETNS_HOSTS_RELAY_PID" 2>/dev/null; then
    NETNS_HOSTS_ERROR="netns_hosts_up: the relay did not start: $(head -1 "$relay_log")"
    [ -n "${NETNS_HOSTS_RELAY_LOG:-}" ] || rm -f "$relay_log"
    netns_hosts_down
    return 2
  fi
  [ -n "${NETNS_HOSTS_RELAY_LOG:-}" ] || rm -f "$relay_log"
  if ip -4 addr show | grep -q "inet $subnet\."; then
    NETNS_HOSTS_ERROR="netns_hosts_up: $subnet.0/24 exists outside the namespaces"
    netns_hosts_down
    return 2
  fi
}

# No IPv6 (router solicitations and duplicate-address probes would be traffic
# of their own), loopback up.
_netns_hosts_quiet() {
  ip netns exec "$1" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 &&
    echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6' && ip -n "$1" link set lo up
}

# netns_hosts_down: kills everything left in the namespaces (the relay too)
# and deletes them. Safe to call twice, or after a failed netns_hosts_up.
netns_hosts_down() {
  local ns pid
  if [ -n "${NETNS_HOSTS_RELAY_LOG:-}" ] && [ -n "$NETNS_HOSTS_RELAY_PID" ]; then
    kill -TERM "$NETNS_HOSTS_RELAY_PID" 2>/dev/null
    sleep 0.3  # it checks for the signal at least every 200 ms
  fi
  for ns in "${NETNS_HOSTS_NS[@]}" $NETNS_HOSTS_MIDDLE; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  [ -n "$NETNS_HOSTS_RELAY_PID" ] && wait "$NETNS_HOSTS_RELAY_PID" 2>/dev/null
  NETNS_HOSTS_NS=()
  NETNS_HOSTS_ADDR=()
  NETNS_HOSTS_MIDDLE=""
  NETNS_HOSTS_RELAY_PID=""
}
