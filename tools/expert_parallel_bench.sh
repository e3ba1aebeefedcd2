#!/bin/bash
# Benchmarks expert parallelism on a Qwen3-30B-A3B-shaped mixture of experts
# cut to 2 layers (dim 2048, 32 query / 4 KV heads of 128, 128 experts of 768
# hidden units, 8 chosen per token, Q8_0; the byte-level vocabulary of 259,
# so the classifier is negligible): decode tokens/s of
#   one rank x 1 thread | one rank x 2 threads | --ep 2 (2 ranks x 1 thread)
#   | with SKEW > 0, also --ep 2 --experts-by-load (placed by the routing
#     one rank measured on this prompt, infer --routing-stats)
# interleaved round by round, and each rank's peak RSS.
#
#   tools/expert_parallel_bench.sh [WORK_DIR] [ROUNDS] [TOKENS] [WEIGHTS] [SKEW]
#
# SKEW (default 0: the toy's near-uniform routing) is make_toy_model's
# --router-skew: a biased router whose histogram (each layer's hottest
# experts' shares, and the busiest rank's share under contiguous runs) is
# printed before the rounds.
# WORK_DIR (default /tmp/inferno_ep_bench) holds the model, made once with
# //tools:make_toy_model (about 5 GB of RAM and a few minutes); ROUNDS
# (default 3) rounds of TOKENS (default 128) generated tokens each; WEIGHTS
# (default mapped) is infer's --weights. The file is read once before the
# rounds so that every run finds it in the page cache. Prints one line per
# run ("side round decode_tok_s rss_kb=... compute_s=... wait_s=...", per
# rank, the compute and wait totals of the whole run, prefill included) and
# the medians.
# Bazel startup options (e.g. --output_base=...) come from $BAZEL_STARTUP.
set -euo pipefail
WORK="${1:-/tmp/inferno_ep_bench}"
ROUNDS="${2:-3}"
TOKENS="${3:-128}"
WEIGHTS="${4:-mapped}"
SKEW="${5:-0}"
BAZEL=(bazel ${BAZEL_STARTUP:-})
cd "$(dirname "$0")/.."

"${BAZEL[@]}" build --config=opt //tools:infer //tools:launch //tools:make_toy_model >&2
BIN="$("${BAZEL[@]}" info --config=opt bazel-bin 2>/dev/null)/tools"
mkdir -p "$WORK"
MODEL="$WORK/qwen3_30b_a3b_2l.gguf"
[[ "$SKEW" = 0 ]] || MODEL="$WORK/qwen3_30b_a3b_2l_skew$SKEW.gguf"
if [[ ! -f "$MODEL" ]]; then
  "$BIN/make_toy_model" --format gguf --dtype q8_0 --out "$MODEL" --dim 2048 --layers 2 --heads 32 \
    --kv-heads 4 --head-dim 128 --architecture qwen3_moe --experts 128 --experts-per-token 8 \
    --expert-hidden 768 --hidden 6144 --norm-topk-prob --seq-len 4096 --router-skew "$SKEW" >&2
fi
cat "$MODEL" >/dev/null
STATS="$WORK/routing_skew$SKEW.json"
if [[ "$SKEW" != 0 ]]; then
  "$BIN/infer" --model "$MODEL" --weights "$WEIGHTS" --prompt "Once upon a time" --max-new-tokens "$TOKENS" \
    --routing-stats "$STATS" >/dev/null 2>&1
  python3 - "$STATS" <<'EOF'
import json, sys
stats = json.load(open(sys.argv[1]))
for layer, counts in enumerate(stats["counts"]):
    total = sum(counts)
    top = sorted(range(len(counts)), key=lambda e: -counts[e])[:8]
    half = len(counts) // 2
    runs = [sum(counts[:half]) / total, sum(counts[half:]) / total]
    print("layer %d: %d routed; hottest experts %s; contiguous halves %.3f, %.3f" % (
        layer, total, ", ".join("%d: %.3f" % (e, counts[e] / total) for e in top), *runs))
EOF
fi

# run SIDE ROUND WORLD INFER_FLAGS...: one generation; prints the line.
run() {
  local side="$1" round="$2" world="$3"
  shift 3
  rm -f "$WORK"/rss.*
  "$BIN/launch" -n "$world" --timeout 600 -- /bin/sh -c \
    'exec /usr/bin/time -o "$0/rss.$RANK" -f "%M" "$@"' "$WORK" \
    "$BIN/infer" --model "$MODEL" --weights "$WEIGHTS" --prompt "Once upon a time" \
    --max-new-tokens "$TOKENS" "$@" >/dev/null 2>"$WORK/run.err"
  local rate
  rate=$(sed -n 's/.* decode: \([0-9.]*\) tok\/s.*/\1/p' "$WORK/run.err")
  echo "$side $round $rate rss_kb=$(cat "$WORK"/rss.* | paste -sd,)" \
    "compute_s=$(sed -n 's/^rank .*compute \([0-9.]*\) s,.*/\1/p' "$WORK/run.err" | paste -sd,)" \
    "wait_s=$(sed -n 's/^rank .*wait \([0-9.]*\) s$/\1/p' "$WORK/run.err" | paste -sd,)"
}

for ((round = 1; round <= ROUNDS; round++)); do
  run 1x1 "$round" 1 --threads 1
  run 1x2 "$round" 1 --threads 2
  run ep2 "$round" 2 --ep 2 --threads 1
  [[ "$SKEW" = 0 ]] || run ep2_load "$round" 2 --ep 2 --threads 1 --experts-by-load "$STATS"
done | tee "$WORK/results.txt"

python3 - "$WORK/results.txt" <<'EOF'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    side, _, rate, *_ = line.split()
    rates.setdefault(side, []).append(float(rate))
median = {side: statistics.median(r) for side, r in rates.items()}
for side, m in median.items():
    print("%s: median %.1f tok/s of %s" % (side, m, rates[side]))
for side in ("ep2", "ep2_load"):
    if side in median:
        print("%s / 1x1 = %.2f, %s / 1x2 = %.2f" % (side, median[side] / median["1x1"], side,
                                                    median[side] / median["1x2"]))
if "ep2_load" in median:
    print("ep2_load / ep2 = %.2f" % (median["ep2_load"] / median["ep2"]))
EOF
