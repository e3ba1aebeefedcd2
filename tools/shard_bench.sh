#!/bin/bash
# Benchmarks //tools:shard against `cp` of the same checkpoint on the same
# disk, side by side in one run, and checks shard's peak RSS against the
# bound (2 x the largest tensor + 64 MiB).
#
#   tools/shard_bench.sh [WORK_DIR] [ROUNDS]
#
# Generates (once) a >= 1 GiB f32 Llama checkpoint with //tools:make_toy_model
# in WORK_DIR (default /tmp/inferno_shard_bench), then for ROUNDS rounds
# (default 3) alternates `cp` of model.safetensors and `shard --pp 3`, each
# into a fresh output, timed by /usr/bin/time. Prints a markdown table of the
# best and median times, throughput, the ratio shard/cp, and peak RSS.
# Bazel startup options (e.g. --output_base=...) come from $BAZEL_STARTUP.
set -euo pipefail
WORK="${1:-/tmp/inferno_shard_bench}"
ROUNDS="${2:-3}"
BAZEL=(bazel ${BAZEL_STARTUP:-})
cd "$(dirname "$0")/.."

"${BAZEL[@]}" build -c opt //tools:shard //tools:make_toy_model >&2
BIN="$("${BAZEL[@]}" info -c opt bazel-bin 2> /dev/null)"
mkdir -p "$WORK"

# dim 2048, 6 layers, 16 heads, vocab 32000: 1.61 GiB of f32.
DIM=2048
VOCAB=32000
if [[ ! -f "$WORK/model/model.safetensors" ]]; then
  "$BIN/tools/make_toy_model" --out "$WORK/model" --dim "$DIM" --layers 6 --heads 16 --kv-heads 16 --vocab "$VOCAB" >&2
fi
MODEL_BYTES=$(stat -c %s "$WORK/model/model.safetensors")
LARGEST=$((VOCAB * DIM * 4))  # the embedding (and lm_head), f32
BOUND_KB=$(((2 * LARGEST + (64 << 20)) / 1024))

# Runs a command; prints "elapsed_seconds peak_rss_kb".
timed() {
  /usr/bin/time -o "$WORK/time.txt" -f "%e %M" "$@" 2> /dev/null
  cat "$WORK/time.txt"
}

cp_times=()
shard_times=()
shard_rss=0
for ((round = 0; round < ROUNDS; round++)); do
  rm -rf "$WORK/cp.out" "$WORK/shards"
  sync
  t=$(timed cp "$WORK/model/model.safetensors" "$WORK/cp.out")
  cp_times+=("${t% *}")
  rm -rf "$WORK/cp.out"
  sync
  t=$(timed "$BIN/tools/shard" --model "$WORK/model" --pp 3 --out "$WORK/shards")
  shard_times+=("${t% *}")
  rss="${t#* }"
  ((rss > shard_rss)) && shard_rss=$rss
done
t=$(timed "$BIN/tools/shard" --model "$WORK/model" --pp 3 --out "$WORK/shards")
verify_time="${t% *}"
rm -rf "$WORK/shards"

stats() {  # best median
  printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%s %s", v[1], v[int((NR+1)/2)]}'
}
read -r cp_best cp_median <<< "$(stats "${cp_times[@]}")"
read -r shard_best shard_median <<< "$(stats "${shard_times[@]}")"
rate() { awk -v b="$MODEL_BYTES" -v t="$1" 'BEGIN {printf "%.0f", b / t / 1048576}'; }

echo "model: $WORK/model/model.safetensors, $MODEL_BYTES bytes; $ROUNDS rounds; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| | best s | median s | MiB/s (best) | peak RSS |"
echo "|---|---|---|---|---|"
echo "| cp | $cp_best | $cp_median | $(rate "$cp_best") | |"
echo "| shard --pp 3 | $shard_best | $shard_median | $(rate "$shard_best") | $((shard_rss / 1024)) MiB |"
echo "| shard re-run (verify + skip) | $verify_time | | $(rate "$verify_time") | |"
echo
awk -v s="$shard_best" -v c="$cp_best" -v sm="$shard_median" -v cm="$cp_median" \
  'BEGIN {printf "throughput shard/cp: %.2f (best), %.2f (median); target >= 0.5\n", c / s, cm / sm}'
echo "peak RSS bound 2 x largest tensor ($((LARGEST >> 20)) MiB) + 64 MiB = $((BOUND_KB / 1024)) MiB:" \
  "$( ((shard_rss <= BOUND_KB)) && echo met || echo EXCEEDED)"
