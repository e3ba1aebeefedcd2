#!/bin/bash
# Benchmarks expert parallelism on a Qwen3-30B-A3B-shaped mixture of experts
# cut to 2 layers (dim 2048, 32 query / 4 KV heads of 128, 128 experts of 768
# hidden units, 8 chosen per token, in DTYPE; the byte-level vocabulary of
# 259, so the classifier is negligible): decode tokens/s of
#   one rank x 1 thread | one rank x 2 threads | --ep 2 (2 ranks x 1 thread)
#   | with SKEW > 0, also --ep 2 --experts-by-load (placed by the routing
#     one rank measured on this prompt, infer --routing-stats)
#   | for each R in $REPLICAS (e.g. REPLICAS="8 16"), --ep 2 --expert-replicas R
#     (side ep2_rR), and with SKEW > 0 also with --experts-by-load (ep2_load_rR:
#     the hottest experts copied)
#   | with $LLAMA_CPP set, llama.cpp on the same file at 1 and 2 threads
# interleaved round by round, and each rank's peak RSS.
#
#   tools/expert_parallel_bench.sh [WORK_DIR] [ROUNDS] [TOKENS] [WEIGHTS] [SKEW] [DTYPE]
#
# SKEW (default 0: the toy's near-uniform routing) is make_toy_model's
# --router-skew: a biased router whose histogram (each layer's hottest
# experts' shares, and the busiest rank's share under contiguous runs) is
# printed before the rounds.
# DTYPE (default q8_0) is any make_toy_model --dtype, or q4_k_m / q5_k_m:
# llama.cpp's mix, made by convert_to_gguf from an f16 file of the same model.
# WORK_DIR (default /tmp/inferno_ep_bench) holds the model, made once with
# //tools:make_toy_model (about 5 GB of RAM and a few minutes); ROUNDS
# (default 3) rounds of TOKENS (default 128) generated tokens each; WEIGHTS
# (default copy) is infer's --weights. Copy, because on this VM a file
# mapped in place is mapped in 4 KiB pages (FilePmdMapped 0 kB: the page
# cache holds the bench's file in small folios), and its TLB misses cost
# decode 1.2x (one rank) to 1.8x (--ep 2), quiet (docs/engine.md, "Where
# EP 2's time goes"). The file is
# read once before the rounds so that every run finds it in the page cache.
# Prints one line per run ("side round decode_tok_s rss_kb=... compute_s=...
# wait_s=...", per rank, the compute and wait totals of the whole run,
# prefill included) and the medians.
# LLAMA_CPP, when set, is the folder holding node_modules/node-llama-cpp
# (tools/yardsticks/fetch_llama_cpp.sh); llama.cpp gets the prompt's token
# ids (BOS and the bytes, as inferno's byte-level vocabulary encodes it).
# Bazel startup options (e.g. --output_base=...) come from $BAZEL_STARTUP;
# with $BIN set (a folder holding infer, launch, make_toy_model and
# convert_to_gguf, e.g. another commit's copies for an A/B), nothing is built.
set -euo pipefail
WORK="${1:-/tmp/inferno_ep_bench}"
ROUNDS="${2:-3}"
TOKENS="${3:-128}"
WEIGHTS="${4:-copy}"
SKEW="${5:-0}"
DTYPE="${6:-q8_0}"
PROMPT="Once upon a time"
BAZEL=(bazel ${BAZEL_STARTUP:-})
cd "$(dirname "$0")/.."

if [[ -z "${BIN:-}" ]]; then
  "${BAZEL[@]}" build --config=opt //tools:infer //tools:launch //tools:make_toy_model //tools:convert_to_gguf >&2
  BIN="$("${BAZEL[@]}" info --config=opt bazel-bin 2>/dev/null)/tools"
fi
mkdir -p "$WORK"
NAME=qwen3_30b_a3b_2l
[[ "$SKEW" = 0 ]] || NAME="${NAME}_skew$SKEW"
[[ "$DTYPE" = q8_0 ]] || NAME="${NAME}_$DTYPE"
MODEL="$WORK/$NAME.gguf"
if [[ ! -f "$MODEL" ]]; then
  MADE="$MODEL"
  case "$DTYPE" in q4_k_m | q5_k_m) MADE="$WORK/${NAME}_f16.gguf" ;; esac
  MAKE_DTYPE="$DTYPE"
  [[ "$MADE" = "$MODEL" ]] || MAKE_DTYPE=f16
  "$BIN/make_toy_model" --format gguf --dtype "$MAKE_DTYPE" --out "$MADE" --dim 2048 --layers 2 --heads 32 \
    --kv-heads 4 --head-dim 128 --architecture qwen3_moe --experts 128 --experts-per-token 8 \
    --expert-hidden 768 --hidden 6144 --norm-topk-prob --seq-len 4096 --router-skew "$SKEW" >&2
  if [[ "$MADE" != "$MODEL" ]]; then
    "$BIN/convert_to_gguf" --model "$MADE" --dtype "$DTYPE" --out "$MODEL" >&2
    rm -f "$MADE"
  fi
fi
cat "$MODEL" >/dev/null
STATS="$WORK/routing_$NAME.json"
if [[ "$SKEW" != 0 ]]; then
  "$BIN/infer" --model "$MODEL" --weights "$WEIGHTS" --prompt "$PROMPT" --max-new-tokens "$TOKENS" \
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
    "$BIN/infer" --model "$MODEL" --weights "$WEIGHTS" --prompt "$PROMPT" \
    --max-new-tokens "$TOKENS" "$@" >/dev/null 2>"$WORK/run.err"
  local rate
  rate=$(sed -n 's/.* decode: \([0-9.]*\) tok\/s.*/\1/p' "$WORK/run.err")
  echo "$side $round $rate rss_kb=$(cat "$WORK"/rss.* | paste -sd,)" \
    "compute_s=$(sed -n 's/^rank .*compute \([0-9.]*\) s,.*/\1/p' "$WORK/run.err" | paste -sd,)" \
    "wait_s=$(sed -n 's/^rank .*wait \([0-9.]*\) s$/\1/p' "$WORK/run.err" | paste -sd,)"
}

# llama SIDE ROUND THREADS: llama.cpp's greedy generation on the same file.
llama() {
  local ids rate
  ids="1 $(printf '%s' "$PROMPT" | od -An -tu1 | awk '{for (i = 1; i <= NF; ++i) printf "%d ", $i + 3}')"
  rate=$(node tools/yardsticks/llama_cpp_generate.mjs --package "$LLAMA_CPP" --model "$MODEL" \
    --prompt-ids "$ids" --max-new-tokens "$TOKENS" --threads "$3" 2>/dev/null |
    sed -n 's/.*decode [0-9]* tokens \([0-9.]*\) tok\/s.*/\1/p')
  echo "$1 $2 $rate"
}

for ((round = 1; round <= ROUNDS; round++)); do
  run 1x1 "$round" 1 --threads 1
  run 1x2 "$round" 1 --threads 2
  run ep2 "$round" 2 --ep 2 --threads 1
  [[ "$SKEW" = 0 ]] || run ep2_load "$round" 2 --ep 2 --threads 1 --experts-by-load "$STATS"
  for replicas in ${REPLICAS:-}; do
    run "ep2_r$replicas" "$round" 2 --ep 2 --threads 1 --expert-replicas "$replicas"
    [[ "$SKEW" = 0 ]] ||
      run "ep2_load_r$replicas" "$round" 2 --ep 2 --threads 1 --experts-by-load "$STATS" --expert-replicas "$replicas"
  done
  if [[ -n "${LLAMA_CPP:-}" ]]; then
    llama llama1 "$round" 1
    llama llama2 "$round" 2
  fi
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
for side in median:
    if side.startswith("ep2"):
        print("%s / 1x1 = %.2f, %s / 1x2 = %.2f" % (side, median[side] / median["1x1"], side,
                                                    median[side] / median["1x2"]))
for side in ("1x1", "1x2", "ep2"):
    threads = "llama2" if side == "1x2" else "llama1"
    if threads in median:
        print("%s / llama.cpp at %s thread(s) = %.2f" % (side, threads[-1], median[side] / median[threads]))
for side in median:
    if side.startswith("ep2_"):
        print("%s / ep2 = %.2f" % (side, median[side] / median["ep2"]))
EOF
