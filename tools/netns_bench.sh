#!/bin/bash
# What a sync costs between two namespace "hosts" (tools/netns_hosts.sh),
# and tensor-parallel decode against distributed-llama on the same links,
# round by round, each side in turn within a round (docs/network.md):
#   tcp      plain TCP ping-pong (tcp_probe), the floor
#   pp/ar    collective_bench ping_pong and all_reduce, for each data path of
#            TRANSPORTS (zmq: ZeroMQ, as main had it; tcp: the direct TCP
#            data path; auto: the default) and each of MODES (secure: CURVE
#            on, as launch runs it by default; insecure: launch --insecure)
#   infer    infer --tp 2 decode tok/s, likewise (with MODEL), and the bytes
#            host 0 sent and received per generated token (its link's
#            counters: payload and TCP/IP headers), for each of
#            INFER_VARIANTS
#   dllama   distributed-llama root + 1 worker (with DLLAMA), for each of
#            DLLAMA_VARIANTS
# Each round runs every RTT of RTT_US (a comma-separated list) in turn, on
# hosts made afresh for it. Prints one line per measurement, "round R rtt
# RTT_US KIND SIZE VALUE UNIT" (KIND naming the data path and mode, e.g.
# all_reduce_tcp_secure, or VARIANT_TRANSPORT_MODE for infer, dllama_VARIANT),
# and at the end, per RTT, each KIND's median over the rounds, and for each
# infer variant with a distributed-llama variant of the same name the ratio
# ours / distributed-llama: the median of the per-round ratios and the ratio
# of the medians.
# Environment: SIZES (bytes, default 4096,8192,16384), COLLECTIVES (0: skip
# tcp_probe and collective_bench), STEPS (infer and dllama tokens, default
# 128), TRANSPORTS (default "zmq tcp"), MODES (default "secure insecure"),
# INFER_VARIANTS (';'-separated "NAME BINARY [FLAGS...]", NAME without '_',
# run in turn each round; default "infer BIN_DIR/infer"; e.g. "f32
# bin/infer;q80 bin/infer --shards q4_0_tp2 --sync-dtype q8_0": a variant
# with --model or --shards reads those instead of MODEL), INFER_FLAGS (added to every infer run, e.g.
# "--temperature 0.8 --top-k 40"), DLLAMA_VARIANTS (';'-separated "NAME
# MODEL.m BUFFER_FLOAT_TYPE"; default "f32 DLLAMA_MODEL f32"; e.g. "f32
# m_f32.m f32;q80 m_q40.m q80"), RANKS_PER_HOST (default 1; with 2,
# collective_bench runs 4 ranks, each host's two over shared memory under
# --transport auto; infer variants then need --tp 4), and HIERARCHICAL=1
# (each collective_bench run again with --hierarchical, its lines' KIND
# ending in _hier).
#
#   tools/netns_bench.sh BIN_DIR RATE_MBIT RTT_US[,RTT_US...] ROUNDS [MODEL TOKENIZER [DLLAMA DLLAMA_MODEL DLLAMA_TOKENIZER]]
#
# BIN_DIR holds frame_delay_relay, tcp_probe, launch, collective_bench and
# infer (bazel-bin/tools). MODEL is a llama2.c .bin that infer reads and
# DLLAMA_MODEL the same weights converted for DLLAMA (dllama_convert.py;
# DLLAMA_MODEL "-" when DLLAMA_VARIANTS names the models). Needs root.
set -u
cd "$(dirname "$0")/.." || exit 1
source tools/netns_hosts.sh
BIN="$1" RATE="$2" RTTS="$3" ROUNDS="$4"
MODEL="${5:-}" TOKENIZER="${6:-}" DLLAMA="${7:-}" DLLAMA_MODEL="${8:-}" DLLAMA_TOKENIZER="${9:-}"
SIZES="${SIZES:-4096,8192,16384}"
COLLECTIVES="${COLLECTIVES:-1}"
TRANSPORTS="${TRANSPORTS:-zmq tcp}"
MODES="${MODES:-secure insecure}"
STEPS="${STEPS:-128}"
RANKS_PER_HOST="${RANKS_PER_HOST:-1}"
INFER_VARIANTS="${INFER_VARIANTS:-infer $BIN/infer}"
DLLAMA_VARIANTS="${DLLAMA_VARIANTS:-f32 $DLLAMA_MODEL f32}"
read -r -a INFER_EXTRA <<<"${INFER_FLAGS:-}"
WORK="$(mktemp -d /tmp/netns_bench.XXXXXX)"
trap 'netns_hosts_down; rm -rf "$WORK"' EXIT
INFERNO_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export INFERNO_JOB_SECRET
PORT=$((20000 + RANDOM % 20000))  # free: nothing else runs in these namespaces

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
      --master-addr "${NETNS_HOSTS_ADDR[0]}" --master-port $PORT --timeout 280 "${flags[@]}" -- "$@" \
      >"$WORK/$name.$r.out" 2>"$WORK/$name.$r.err" &
    pids+=($!)
  done
  wait "${pids[@]}" || { echo "netns_bench: $name failed:" >&2; tail -3 "$WORK/$name.0.err" >&2; }
}

# link_bytes: what host 0 has sent and received over its links so far.
link_bytes() {
  ip netns exec "${NETNS_HOSTS_NS[0]}" sh -c 'for d in /sys/class/net/*; do
    [ "${d##*/}" = lo ] || echo $(($(cat "$d/statistics/tx_bytes") + $(cat "$d/statistics/rx_bytes"))); done' |
    awk '{sum += $1} END {print sum + 0}'
}

# collectives ROUND RTT: tcp_probe, then collective_bench per data path and mode.
collectives() {
  local round="$1" rtt="$2" size transport mode levels flag
  ip netns exec "${NETNS_HOSTS_NS[1]}" "$BIN/tcp_probe" --listen 0 >"$WORK/probe.port" &
  for _ in $(seq 50); do grep -q '^port ' "$WORK/probe.port" && break; sleep 0.1; done
  local probe_port
  probe_port=$(awk '/^port /{print $2}' "$WORK/probe.port")
  for size in ${SIZES//,/ }; do
    ip netns exec "${NETNS_HOSTS_NS[0]}" timeout 60 "$BIN/tcp_probe" --connect "${NETNS_HOSTS_ADDR[1]}:$probe_port" \
      --size "$size" --iters 500 | sed -n "s/.*median=\([0-9.]*\).*/round $round rtt $rtt tcp_pingpong $size \1 us/p"
  done
  for transport in $TRANSPORTS; do
    for mode in $MODES; do
      flag=(--transport "$transport")
      [ "$mode" = insecure ] && flag+=(--insecure)
      for levels in "" ${HIERARCHICAL:+--hierarchical}; do
        on_both cb "${flag[@]}" -- "$BIN/collective_bench" --transport "$transport" --ops ping_pong,all_reduce \
          --sizes "$SIZES" --iters 500 $levels
        awk -v r="$round" -v t="$rtt" -v k="${transport}_$mode${levels:+_hier}" \
          '$1 == "ping_pong" || $1 == "all_reduce" {print "round", r, "rtt", t, $1 "_" k, $2, $4, "us"}' \
          "$WORK/cb.0.out"
      done
    done
  done
}

# decode ROUND RTT: each infer variant per data path and mode, then each
# distributed-llama variant.
decode() {
  local round="$1" rtt="$2" transport mode variant words flag source before after kind
  local variants dllama_variants
  IFS=';' read -r -a variants <<<"$INFER_VARIANTS"
  for transport in $TRANSPORTS; do
    for mode in $MODES; do
      flag=(--transport "$transport")
      [ "$mode" = insecure ] && flag+=(--insecure)
      for variant in "${variants[@]}"; do
        read -r -a words <<<"$variant"
        source=(--model "$MODEL")
        [[ " ${words[*]:2} " == *" --model "* || " ${words[*]:2} " == *" --shards "* ]] && source=()
        before=$(link_bytes)
        on_both infer "${flag[@]}" -- "${words[1]}" "${source[@]}" --tokenizer "$TOKENIZER" --tp 2 --threads 1 \
          --prompt-ids 1 --max-new-tokens "$STEPS" --output ids "${INFER_EXTRA[@]}" "${words[@]:2}"
        after=$(link_bytes)
        kind="${words[0]}_${transport}_$mode"
        sed -n "s/.*decode: \([0-9.]*\) tok\/s.*/round $round rtt $rtt $kind - \1 tok_s/p" "$WORK/infer.0.err"
        echo "round $round rtt $rtt $kind - $(((after - before) / STEPS)) bytes_per_token"
      done
    done
  done
  [ -n "$DLLAMA" ] || return 0
  IFS=';' read -r -a dllama_variants <<<"$DLLAMA_VARIANTS"
  for variant in "${dllama_variants[@]}"; do
    read -r -a words <<<"$variant"
    ip netns exec "${NETNS_HOSTS_NS[1]}" setsid -w "$DLLAMA" worker --host "${NETNS_HOSTS_ADDR[1]}" --port 9999 \
      --nthreads 1 >"$WORK/dworker.out" 2>&1 &
    local worker=$!
    sleep 1
    before=$(link_bytes)
    ip netns exec "${NETNS_HOSTS_NS[0]}" timeout 300 setsid -w "$DLLAMA" inference --model "${words[1]}" \
      --tokenizer "$DLLAMA_TOKENIZER" --prompt "" --steps "$STEPS" --temperature 0 --nthreads 1 \
      --buffer-float-type "${words[2]}" --workers "${NETNS_HOSTS_ADDR[1]}:9999" >"$WORK/droot.out" 2>&1 ||
      { echo "netns_bench: dllama ${words[0]} failed:" >&2; tail -3 "$WORK/droot.out" >&2; }
    after=$(link_bytes)
    # Its summary's "tokens/s" line is the last: the Prediction's.
    sed -n "s/^ *tokens\/s: \([0-9.]*\).*/round $round rtt $rtt dllama_${words[0]} - \1 tok_s/p" "$WORK/droot.out" |
      tail -1
    echo "round $round rtt $rtt dllama_${words[0]} - $(((after - before) / STEPS)) bytes_per_token"
    kill "$worker" 2>/dev/null
    wait "$worker" 2>/dev/null
  done
}

for ((round = 1; round <= ROUNDS; round++)); do
  for rtt in ${RTTS//,/ }; do
    netns_hosts_up "$BIN/frame_delay_relay" 2 "$RATE" "$rtt" || { echo "netns_bench: $NETNS_HOSTS_ERROR" >&2; exit 1; }
    {
      [ "$COLLECTIVES" = 0 ] || collectives "$round" "$rtt"
      [ -z "$MODEL" ] || decode "$round" "$rtt"
    } >"$WORK/part"
    netns_hosts_down
    cat "$WORK/part"
    cat "$WORK/part" >>"$WORK/lines"
  done
done

# Medians, and ours / distributed-llama for variants of the same name.
python3 - "$WORK/lines" <<'EOF'
import collections, statistics, sys
values = collections.defaultdict(dict)  # (rtt, kind, size, unit) -> {round: value}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 8 and f[0] == "round" and f[2] == "rtt":
        values[(int(f[3]), f[4], f[5], f[7])][int(f[1])] = float(f[6])
for (rtt, kind, size, unit), by_round in sorted(values.items()):
    print("median rtt %d %s %s %g %s (%d rounds)" % (rtt, kind, size, statistics.median(by_round.values()), unit,
                                                     len(by_round)))
for (rtt, kind, size, unit), ours in sorted(values.items()):
    name = kind.split("_")[0]
    if unit != "tok_s" or kind.startswith("dllama_") or (rtt, "dllama_" + name, size, unit) not in values:
        continue
    theirs = values[(rtt, "dllama_" + name, size, unit)]
    rounds = sorted(set(ours) & set(theirs))
    ratios = [ours[r] / theirs[r] for r in rounds if theirs[r] > 0]
    if not ratios:
        continue
    print("ratio rtt %d %s / dllama_%s: per-round %s, median of ratios %.2f, ratio of medians %.2f (%d rounds)" %
          (rtt, kind, name, " ".join("%.2f" % r for r in ratios), statistics.median(ratios),
           statistics.median(ours.values()) / statistics.median(theirs.values()), len(ratios)))
EOF
