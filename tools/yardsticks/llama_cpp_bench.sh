#!/bin/bash
# Side-by-side benchmark, inferno against llama.cpp (node-llama-cpp 3.21.1's
# prebuilt CPU build, see fetch_llama_cpp.sh), on the same GGUF files with
# random weights (make_toy_model --format gguf), one file per type, in one of
# two shapes (SHAPE): stories15m (dim 288, hidden 768, 6 layers, 6 heads,
# vocab 32000, context 512; the default) or tinyllama4 (TinyLlama-1.1B's
# layers cut to 4: dim 2048, hidden 5632, 32 heads, 4 KV heads, vocab 32000,
# context 512), or gemma3_1b4, qwen3_06b4, phi3mini4 (Gemma-3-1B's,
# Qwen3-0.6B's and Phi-3-mini's layers cut to 4). Measures decode tokens/s (DECODE_TOKENS tokens after a
# 1-token prompt; default 128) and prefill tokens/s of a 200-token prompt (the
# prompt's tokens over the time to the first generated token), at each of
# THREADS (default "1 2"). Runs alternate between the two engines, ROUNDS
# times; each line is one measurement, then a median summary with the ratio
# inferno / llama.cpp. llama.cpp runs with its defaults (F16 KV cache, flash
# attention auto), as its users run it. A DTYPE of llama.cpp's file types
# (q4_k_m, q5_k_m, q6_k, ...: llama_quantize.py's list) is made by llama.cpp's
# own quantizer from the F32 file, as the files users download are.
# BEFORE=INFER2 adds a second inferno build (engine "before", e.g. the
# commit before a kernel change), interleaved with the other two.
#
# Usage: [SHAPE=stories15m|tinyllama4|gemma3_1b4|qwen3_06b4|phi3mini4] [THREADS="1 2"] [DECODE_TOKENS=128] \
#          [BEFORE=INFER2] \
#          llama_cpp_bench.sh ROUNDS INFER MAKE_TOY_MODEL [DTYPE...]   (default f32 f16 q8_0 q4_0)
#   e.g. bazel build --config=opt //tools:infer //tools:make_toy_model
#        tools/yardsticks/llama_cpp_bench.sh 3 bazel-bin/tools/infer bazel-bin/tools/make_toy_model f32 f16
#        SHAPE=tinyllama4 THREADS=1 DECODE_TOKENS=32 tools/yardsticks/llama_cpp_bench.sh 3 ...
set -u
if [ $# -lt 3 ]; then
  echo "usage: $0 ROUNDS INFER MAKE_TOY_MODEL [DTYPE...]" >&2
  exit 2
fi
ROUNDS=$1 INFER=$2 MAKE_TOY=$3
shift 3
DTYPES=("$@")
[ ${#DTYPES[@]} -eq 0 ] && DTYPES=(f32 f16 q8_0 q4_0)
GENERATE="$(dirname "$(readlink -f "$0")")/llama_cpp_generate.mjs"
PACKAGE="${INFERNO_CACHE:-$HOME/.cache/inferno}/yardsticks/node-llama-cpp-3.21.1"
if [ ! -d "$PACKAGE/node_modules/@node-llama-cpp/linux-x64" ]; then
  echo "$PACKAGE is absent: run tools/yardsticks/fetch_llama_cpp.sh" >&2
  exit 1
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PROMPT200="1 $(seq 300 498 | tr '\n' ' ')"
DECODE_TOKENS=${DECODE_TOKENS:-128}
THREAD_COUNTS=(${THREADS:-1 2})
case "${SHAPE:-stories15m}" in
  stories15m) SHAPE_FLAGS=(--dim 288 --layers 6 --heads 6 --kv-heads 6 --vocab 32000 --seq-len 512) ;;
  tinyllama4)
    SHAPE_FLAGS=(--dim 2048 --layers 4 --heads 32 --kv-heads 4 --vocab 32000 --hidden 5632 --seq-len 512)
    ;;
  # The other families' small models, their layers cut to 4 likewise.
  gemma3_1b4)
    SHAPE_FLAGS=(--architecture gemma3 --dim 1152 --layers 4 --heads 4 --kv-heads 1 --head-dim 256 --hidden 6912
      --vocab 262144 --tie-embeddings --sliding-window 512 --seq-len 1024)
    ;;
  qwen3_06b4)
    SHAPE_FLAGS=(--architecture qwen3 --dim 1024 --layers 4 --heads 16 --kv-heads 8 --head-dim 128 --hidden 3072
      --vocab 151936 --tie-embeddings --seq-len 1024)
    ;;
  phi3mini4)
    SHAPE_FLAGS=(--architecture phi3 --dim 3072 --layers 4 --heads 32 --kv-heads 32 --hidden 8192 --vocab 32064
      --sliding-window 2047 --seq-len 1024)
    ;;
  *)
    echo "SHAPE=${SHAPE}: expected stories15m, tinyllama4, gemma3_1b4, qwen3_06b4 or phi3mini4" >&2
    exit 2
    ;;
esac

QUANTIZE="$(dirname "$(readlink -f "$0")")/llama_quantize.py"
for dtype in "${DTYPES[@]}"; do
  case "$dtype" in
    f32 | f16 | bf16 | q8_0 | q4_0)
      "$MAKE_TOY" --format gguf --dtype "$dtype" "${SHAPE_FLAGS[@]}" --out "$WORK/$dtype.gguf" >/dev/null || exit 1
      ;;
    *)
      [ -f "$WORK/f32.source.gguf" ] ||
        "$MAKE_TOY" --format gguf --dtype f32 "${SHAPE_FLAGS[@]}" --out "$WORK/f32.source.gguf" >/dev/null || exit 1
      python3 "$QUANTIZE" --package "$PACKAGE" "$WORK/f32.source.gguf" "$WORK/$dtype.gguf" "$dtype" >/dev/null 2>&1 ||
        { echo "llama_quantize.py: $dtype failed" >&2; exit 1; }
      ;;
  esac
done
rm -f "$WORK/f32.source.gguf"

# run_infer BINARY DTYPE THREADS PROMPT N: prints "PREFILL_TOK_S DECODE_TOK_S".
run_infer() {
  local binary=$1 stats
  shift
  stats="$("$binary" --model "$WORK/$1.gguf" --threads "$2" --prompt-ids "$3" --max-new-tokens "$4" --output ids \
    2>&1 >/dev/null | grep '^prompt tokens')" || { echo "? ?"; return; }
  echo "$stats" | awk -F'[:,]' '{gsub(/[^0-9.]/, "", $2); gsub(/[^0-9.]/, "", $6); gsub(/[^0-9.]/, "", $8);
    printf "%.1f %s\n", $2 / ($6 / 1000), $8}'
}
# ours / before DTYPE THREADS PROMPT N: INFER's or BEFORE's run_infer.
ours() { run_infer "$INFER" "$@"; }
before() { run_infer "$BEFORE" "$@"; }
# llama DTYPE THREADS PROMPT N: prints "PREFILL_TOK_S DECODE_TOK_S".
llama() {
  node "$GENERATE" --package "$PACKAGE" --model "$WORK/$1.gguf" --threads "$2" --prompt-ids "$3" \
    --max-new-tokens "$4" 2>/dev/null | awk '/^prefill/{print $4, $9}'
}

ENGINES=(ours llama)
[ -n "${BEFORE:-}" ] && ENGINES=(before ours llama)
RESULTS="$WORK/results"
printf '%-6s %-7s %-6s %-8s %10s\n' type threads engine measure tok/s
for round in $(seq "$ROUNDS"); do
  for threads in "${THREAD_COUNTS[@]}"; do
    for dtype in "${DTYPES[@]}"; do
      for engine in "${ENGINES[@]}"; do
        read -r _ decode < <("$engine" "$dtype" "$threads" "1" "$DECODE_TOKENS")
        read -r prefill _ < <("$engine" "$dtype" "$threads" "$PROMPT200" 2)
        printf '%-6s %-7s %-6s %-8s %10s\n' "$dtype" "$threads" "$engine" decode "$decode" "$dtype" "$threads" \
          "$engine" prefill "$prefill" | tee -a "$RESULTS"
      done
    done
  done
done

echo
echo "medians over $ROUNDS rounds (inferno / llama.cpp):"
printf '%-6s %-7s %-8s %10s %10s %7s\n' type threads measure inferno llama.cpp ratio
for dtype in "${DTYPES[@]}"; do
  for threads in "${THREAD_COUNTS[@]}"; do
    for measure in decode prefill; do
      median() {
        awk -v d="$dtype" -v t="$threads" -v e="$1" -v m="$measure" '$1==d && $2==t && $3==e && $4==m {print $5}' \
          "$RESULTS" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
      }
      a=$(median ours) b=$(median llama)
      ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "?"}'; }
      printf '%-6s %-7s %-8s %10s %10s %7s\n' "$dtype" "$threads" "$measure" "$a" "$b" "$(ratio "$a" "$b")"
      if [ -n "${BEFORE:-}" ]; then
        c=$(median before)
        printf '%-6s %-7s %-8s %10s %10s %7s (BEFORE)\n' "$dtype" "$threads" "$measure" "$c" "$b" "$(ratio "$c" "$b")"
      fi
    done
  done
done
