#!/bin/bash
# How fast rank 0 streams a rank its weights (infer --fetch-weights) between
# two namespace "hosts" (tools/netns_hosts.sh), beside plain bulk TCP on the
# same link (tcp_probe), round by round, in turn within a round: bulk TCP,
# then the job as launch runs it (CURVE), then with launch --insecure
# (docs/deploy.md). Host 0 runs rank 0 with --model MODEL; host 1 has no
# --model and no --cache, so every round sends its whole shard; the rate is
# rank 0's (bytes sent over the time from the first piece to the last
# credit) and the count of its progress lines. Prints one line per
# measurement: "round R KIND VALUE Mbit/s".
#
#   tools/fetch_weights_bench.sh BIN_DIR RATE_MBIT ROUNDS MODEL
#
# BIN_DIR holds frame_delay_relay, tcp_probe, launch and infer
# (bazel-bin/tools, --config=opt). Needs root.
set -u
cd "$(dirname "$0")/.." || exit 1
source tools/netns_hosts.sh
BIN="$1" RATE="$2" ROUNDS="$3" MODEL="$4"
WORK="$(mktemp -d /tmp/fetch_bench.XXXXXX)"
trap 'netns_hosts_down; rm -rf "$WORK"' EXIT
netns_hosts_up "$BIN/frame_delay_relay" 2 "$RATE" 0 || { echo "fetch_weights_bench: $NETNS_HOSTS_ERROR" >&2; exit 1; }
H0="${NETNS_HOSTS_NS[0]}" H1="${NETNS_HOSTS_NS[1]}" A0="${NETNS_HOSTS_ADDR[0]}" A1="${NETNS_HOSTS_ADDR[1]}"
INFERNO_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export INFERNO_JOB_SECRET
PORT=$((20000 + RANDOM % 20000)) # free: nothing else runs in these namespaces

ip netns exec "$H1" "$BIN/tcp_probe" --listen 0 >"$WORK/probe.port" &
for _ in $(seq 50); do grep -q '^port ' "$WORK/probe.port" && break; sleep 0.1; done
PROBE_PORT=$(awk '/^port /{print $2}' "$WORK/probe.port")

for ((round = 1; round <= ROUNDS; round++)); do
  ip netns exec "$H0" timeout 60 "$BIN/tcp_probe" --connect "$A1:$PROBE_PORT" --bulk-seconds 2 |
    sed -n "s/.*mbit_s=\([0-9.]*\).*/round $round tcp_bulk \1 Mbit\/s/p"
  for mode in secure insecure; do
    PORT=$((PORT + 1))
    pids=()
    flag=()
    [ $mode = insecure ] && flag=(--insecure)
    for r in 0 1; do
      model=()
      [ $r = 0 ] && model=(--model "$MODEL")
      ip netns exec "${NETNS_HOSTS_NS[$r]}" timeout 300 "$BIN/launch" -n 1 --nnodes 2 --node-rank $r \
        --master-addr "$A0" --master-port $PORT --timeout 280 "${flag[@]}" -- \
        "$BIN/infer" --fetch-weights "${model[@]}" --prompt-ids 1 --max-new-tokens 1 --output ids \
        >"$WORK/fetch.$r.out" 2>"$WORK/fetch.$r.err" &
      pids+=($!)
    done
    wait "${pids[@]}" || { echo "fetch_weights_bench: the job failed:" >&2; tail -3 "$WORK"/fetch.*.err >&2; }
    sed -n "s/.*rank 0: sent \([0-9]*\) bytes.* in \([0-9.]*\) s .*, \([0-9]*\) Mbit\/s.*/round $round fetch_$mode \3 Mbit\/s (\1 bytes in \2 s)/p" \
      "$WORK/fetch.0.err"
    grep -c "sending weights:" "$WORK/fetch.0.err" | sed "s/^/round $round progress_lines_$mode /"
  done
done
