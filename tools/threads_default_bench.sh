#!/bin/bash
# Benchmarks infer's default thread count (base/default_threads.h) against
# --threads 1: decode tokens/s on the llama2.c 110M shape (dim 768, 12
# layers, 12 heads, hidden 2048, vocabulary 32000, tied embeddings, f32),
# one rank, interleaved round by round, and the medians and their ratio.
#
#   tools/threads_default_bench.sh [WORK_DIR] [ROUNDS] [TOKENS]
#
# WORK_DIR (default /tmp/inferno_threads_bench) holds the model, made once
# with //tools:make_toy_model (418 MB); ROUNDS (default 5) rounds of TOKENS
# (default 128) generated tokens each. The file is read once before the
# rounds so that every run finds it in the page cache. Prints one line per run
# ("side round decode_tok_s") and the medians; what the default resolves to
# is infer --help's --threads line.
# Bazel startup options (e.g. --output_base=...) come from $BAZEL_STARTUP.
set -euo pipefail
WORK="${1:-/tmp/inferno_threads_bench}"
ROUNDS="${2:-5}"
TOKENS="${3:-128}"
BAZEL=(bazel ${BAZEL_STARTUP:-})
cd "$(dirname "$0")/.."

"${BAZEL[@]}" build --config=opt //tools:infer //tools:make_toy_model >&2
BIN="$("${BAZEL[@]}" info --config=opt bazel-bin 2>/dev/null)/tools"
MODEL="$WORK/stories110m_shape"
if [[ ! -f "$MODEL/model.safetensors" ]]; then
  "$BIN/make_toy_model" --out "$MODEL" --dim 768 --layers 12 --heads 12 --kv-heads 12 --hidden 2048 \
    --vocab 32000 --seq-len 1024 --tie-embeddings >&2
fi
cat "$MODEL/model.safetensors" >/dev/null
"$BIN/infer" --help | grep -- '--threads' >&2

# run SIDE ROUND INFER_FLAGS...: one generation; prints the line.
run() {
  local side="$1" round="$2"
  shift 2
  local rate
  rate=$("$BIN/infer" --model "$MODEL" --prompt-ids 1 --max-new-tokens "$TOKENS" --output ids "$@" 2>&1 \
    >/dev/null | sed -n 's/.* decode: \([0-9.]*\) tok\/s.*/\1/p')
  echo "$side $round $rate"
}

for ((round = 1; round <= ROUNDS; round++)); do
  run default "$round"
  run threads1 "$round" --threads 1
done | tee "$WORK/results.txt"

python3 - "$WORK/results.txt" <<'EOF'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    side, _, rate = line.split()
    rates.setdefault(side, []).append(float(rate))
median = {side: statistics.median(r) for side, r in rates.items()}
for side, m in median.items():
    print("%s: median %.1f tok/s of %s" % (side, m, rates[side]))
print("default / --threads 1 = %.2f" % (median["default"] / median["threads1"]))
EOF
