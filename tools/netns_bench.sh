#!/bin/bash
# What a sync costs between two namespace "hosts" (tools/netns_hosts.sh),
# round by round, each side in turn within a round (docs/network.md):
#   tcp      plain TCP ping-pong (tcp_probe), the floor
#   pp/ar    collective_bench ping_pong and all_reduce, for each data path of
#            TRANSPORTS (zmq: ZeroMQ, as main had it; tcp: the direct TCP
#            data path) and each of MODES (secure: CURVE on, as launch runs
#            it by default; insecure: launch --insecure)
#   infer    infer --tp 2 decode tok/s, likewise (with MODEL), and the bytes
#            host 0 sent and received per generated token (its link's
#            counters: payload and TCP/IP headers), for each of
#            INFER_VARIANTS
#   dllama   distributed-llama root + 1 worker, f32 buffers (with DLLAMA)
# Prints one line per measurement: "round R KIND SIZE VALUE UNIT", KIND
# naming the data path and mode (e.g. all_reduce_tcp_secure).
# Environment: SIZES (bytes, default 4096,8192,16384), STEPS (infer and
# dllama tokens, default 128), TRANSPORTS (default "zmq tcp"), MODES
# (default "secure insecure"), INFER_VARIANTS (';'-separated "NAME BINARY
# [FLAGS...]", run in turn each round; default "infer BIN_DIR/infer"; e.g.
# "f32 bin/infer --sync-dtype f32;q8 bin/infer --sync-dtype q8_0"), and
# INFER_FLAGS (added to every infer run, e.g. "--temperature 0.8 --top-k 40"),
# RANKS_PER_HOST (default 1; with 2, collective_bench runs 4 ranks, each
# host's two over shared memory under --transport auto; give no MODEL), and
# HIERARCHICAL=1 (each collective_bench run again with --hierarchical, its
# lines' KIND ending in _hier).
#
#   tools/netns_bench.sh BIN_DIR RATE_MBIT RTT_US ROUNDS [MODEL TOKENIZER [DLLAMA DLLAMA_MODEL DLLAMA_TOKENIZER]]
#
# BIN_DIR holds frame_delay_relay, tcp_probe, launch, collective_bench and
# infer (bazel-bin/tools). MODEL is a llama2.c .bin that infer reads and the
# same weights converted for DLLAMA (dllama_convert.py). Needs root.
set -u
cd "$(dirname "$0")/.." || exit 1
source tools/netns_hosts.sh
BIN="$1" RATE="$2" RTT="$3" ROUNDS="$4"
MODEL="${5:-}" TOKENIZER="${6:-}" DLLAMA="${7:-}" DLLAMA_MODEL="${8:-}" DLLAMA_TOKENIZER="${9:-}"
SIZES="${SIZES:-4096,8192,16384}"
TRANSPORTS="${TRANSPORTS:-zmq tcp}"
MODES="${MODES:-secure insecure}"
STEPS="${STEPS:-128}"
RANKS_PER_HOST="${RANKS_PER_HOST:-1}"
INFER_VARIANTS="${INFER_VARIANTS:-infer $BIN/infer}"
read -r -a INFER_EXTRA <<<"${INFER_FLAGS:-}"
WORK="$(mktemp -d /tmp/netns_bench.XXXXXX)"
trap 'netns_hosts_down; rm -rf "$WORK"' EXIT
netns_hosts_up "$BIN/frame_delay_relay" 2 "$RATE" "$RTT" || { echo "netns_bench: $NETNS_HOSTS_ERROR" >&2; exit 1; }
H0="${NETNS_HOSTS_NS[0]}" H1="${NETNS_HOSTS_NS[1]}" A0="${NETNS_HOSTS_ADDR[0]}" A1="${NETNS_HOSTS_ADDR[1]}"
INFERNO_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export INFERNO_JOB_SECRET
PORT=$((20000 + RANDOM % 20000))  # free: nothing else runs in these namespaces

ip netns exec "$H1" "$BIN/tcp_probe" --listen 0 >"$WORK/probe.port" &
for _ in $(seq 50); do grep -q '^port ' "$WORK/probe.port" && break; sleep 0.1; done
PROBE_PORT=$(awk '/^port /{print $2}' "$WORK/probe.port")

# on_both NAME LAUNCH_FLAGS -- COMMAND...: one launch per host, rank 0 on host 0,
# each in a session of its own (setsid), as on separate hosts: in one session
# both "hosts" would share one scheduler autogroup, and so one CPU share
# against the other processes of this machine (docs/network.md).
# rank 0's stdout and stderr land in $WORK/NAME.out and .err.
on_both() {
  local name="$1" flags=()
  shift
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  PORT=$((PORT + 1))
  local pids=() r
  for r in 0 1; do
    ip netns exec "${NETNS_HOSTS_NS[$r]}" timeout 300 setsid -w "$BIN/launch" -n "$RANKS_PER_HOST" --nnodes 2 --node-rank $r \
      --master-addr "$A0" --master-port $PORT --timeout 280 "${flags[@]}" -- "$@" \
      >"$WORK/$name.$r.out" 2>"$WORK/$name.$r.err" &
    pids+=($!)
  done
  wait "${pids[@]}" || { echo "netns_bench: $name failed:" >&2; tail -3 "$WORK/$name.0.err" >&2; }
}

# link_bytes: what host 0 has sent and received over its links so far.
link_bytes() {
  ip netns exec "$H0" sh -c 'for d in /sys/class/net/*; do
    [ "${d##*/}" = lo ] || echo $(($(cat "$d/statistics/tx_bytes") + $(cat "$d/statistics/rx_bytes"))); done' |
    awk '{sum += $1} END {print sum + 0}'
}

for ((round = 1; round <= ROUNDS; round++)); do
  for size in ${SIZES//,/ }; do
    ip netns exec "$H0" timeout 60 "$BIN/tcp_probe" --connect "$A1:$PROBE_PORT" --size "$size" --iters 500 |
      sed -n "s/.*median=\([0-9.]*\).*/round $round tcp_pingpong $size \1 us/p"
  done
  for transport in $TRANSPORTS; do
    for mode in $MODES; do
      flag=(--transport "$transport")
      [ "$mode" = insecure ] && flag+=(--insecure)
      for levels in "" ${HIERARCHICAL:+--hierarchical}; do
        on_both cb "${flag[@]}" -- "$BIN/collective_bench" --transport "$transport" --ops ping_pong,all_reduce \
          --sizes "$SIZES" --iters 500 $levels
        awk -v r="$round" -v k="${transport}_$mode${levels:+_hier}" \
          '$1 == "ping_pong" || $1 == "all_reduce" {print "round", r, $1 "_" k, $2, $4, "us"}' "$WORK/cb.0.out"
      done
    done
  done
  [ -n "$MODEL" ] || continue
  IFS=';' read -r -a variants <<<"$INFER_VARIANTS"
  for transport in $TRANSPORTS; do
    for mode in $MODES; do
      flag=(--transport "$transport")
      [ "$mode" = insecure ] && flag+=(--insecure)
      for variant in "${variants[@]}"; do
        read -r -a words <<<"$variant"
        before=$(link_bytes)
        on_both infer "${flag[@]}" -- "${words[1]}" --model "$MODEL" --tokenizer "$TOKENIZER" --tp 2 --threads 1 \
          --prompt-ids 1 --max-new-tokens "$STEPS" --output ids "${INFER_EXTRA[@]}" "${words[@]:2}"
        after=$(link_bytes)
        kind="${words[0]}_${transport}_$mode"
        sed -n "s/.*decode: \([0-9.]*\) tok\/s.*/round $round $kind - \1 tok_s/p" "$WORK/infer.0.err"
        echo "round $round $kind - $(((after - before) / STEPS)) bytes_per_token"
      done
    done
  done
  [ -n "$DLLAMA" ] || continue
  ip netns exec "$H1" setsid -w "$DLLAMA" worker --host "$A1" --port 9999 --nthreads 1 >"$WORK/dworker.out" 2>&1 &
  worker=$!
  sleep 1
  ip netns exec "$H0" timeout 300 setsid -w "$DLLAMA" inference --model "$DLLAMA_MODEL" --tokenizer "$DLLAMA_TOKENIZER" \
    --prompt "" --steps "$STEPS" --temperature 0 --nthreads 1 --buffer-float-type f32 --workers "$A1:9999" \
    >"$WORK/droot.out" 2>&1
  sed -n "s/^ *tokens\/s: \([0-9.]*\).*/round $round dllama - \1 tok_s/p" "$WORK/droot.out" | tail -1  # Prediction's
  kill "$worker" 2>/dev/null
  wait "$worker" 2>/dev/null
done
