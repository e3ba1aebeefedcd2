#!/bin/bash
# The soak benchmark of issue 6, end to end, at W = 3 ranks under launch:
# 1. //tools:soak_bench: SMALL_OPS small collectives, then LARGE_OPS
#    all_reduces of 16 MiB; each rank prints VmRSS and open descriptors at
#    the start, middle and end of each phase;
# 2. a TOKENS-token pipeline-parallel generation with //tools:infer on a toy
#    model; this script samples each infer rank's VmRSS and descriptors from
#    /proc every 50 ms and prints the first, middle and last samples.
# Flat figures mean no leak. Built with --config=opt.
#
#   tools/soak.sh [SMALL_OPS [LARGE_OPS [TOKENS]]]     (default 100000 1000 1000)
#
# Bazel startup options (e.g. --output_base=...) come from $BAZEL_STARTUP.
set -uo pipefail
SMALL_OPS="${1:-100000}" LARGE_OPS="${2:-1000}" TOKENS="${3:-1000}"
WORLD=3
BAZEL=(bazel ${BAZEL_STARTUP:-})
cd "$(dirname "$0")/.."
"${BAZEL[@]}" build --config=opt //tools:launch //tools:soak_bench //tools:infer //tools:make_toy_model >&2 || exit 1
BIN="$("${BAZEL[@]}" info --config=opt bazel-bin 2>/dev/null)/tools"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "== soak_bench: $SMALL_OPS small collectives, $LARGE_OPS all_reduces of 16 MiB, $WORLD ranks"
"$BIN/launch" -n $WORLD -- "$BIN/soak_bench" --small-ops "$SMALL_OPS" --large-ops "$LARGE_OPS" 2>"$WORK/soak.err" |
  sort -k3,3n -k4,4r -s || { cat "$WORK/soak.err" >&2; exit 1; }

echo "== infer: $TOKENS tokens, $WORLD ranks, toy model (dim 256, 6 layers)"
# Large enough that the generation lasts seconds and the samples mean something.
"$BIN/make_toy_model" --out "$WORK/toy" --dim 256 --layers 6 --seq-len $((TOKENS + 64)) >/dev/null || exit 1
"$BIN/launch" -n $WORLD -- "$BIN/infer" --model "$WORK/toy" --prompt "Once upon a time" \
  --max-new-tokens "$TOKENS" --output ids >"$WORK/ids" 2>"$WORK/infer.err" &
launch_pid=$!
# rank pid: one line per sample, "rank vmrss_kib fds".
while kill -0 "$launch_pid" 2>/dev/null; do
  for pid in $(pgrep -P "$launch_pid"); do
    rank=$({ tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | sed -n 's/^RANK=//p')
    rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null)
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
    [ -n "$rank" ] && [ -n "$rss" ] && echo "$rank $rss $fds" >>"$WORK/samples"
  done
  sleep 0.05
done
wait "$launch_pid" || { cat "$WORK/infer.err" >&2; exit 1; }
echo "generated $(wc -w <"$WORK/ids") tokens; $(grep -m1 'decode:' "$WORK/infer.err")"
for ((rank = 0; rank < WORLD; rank++)); do
  grep "^$rank " "$WORK/samples" >"$WORK/samples.$rank"
  n=$(wc -l <"$WORK/samples.$rank")
  # Skip the samples before the model is loaded and the group joined (the
  # first 10%), and the last one (the process may be exiting).
  first=$((n / 10 + 1)) middle=$((n / 2 + 1)) last=$((n > 1 ? n - 1 : 1))
  for pick in "start $first" "middle $middle" "end $last"; do
    set -- $pick
    read -r _ rss fds < <(sed -n "$2p" "$WORK/samples.$rank")
    echo "infer rank $rank $1 sample $2/$n vmrss_kib $rss fds $fds"
  done
done
