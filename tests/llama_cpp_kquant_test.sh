#!/bin/bash
# GGUF files as people download them, made by llama.cpp's own quantizer
# (llama_model_quantize, tools/yardsticks/llama_quantize.py) from an F32 toy
# model (make_toy_model: dim 512, head_dim 128, so every matrix but down_proj takes
# K-quants; hidden 640, not a multiple of 256, so down_proj falls back to
# Q5_0 / Q5_1 / Q8_0 as llama-quantize does): for Q4_K_M, Q5_K_M and Q6_K,
# //tools:infer's greedy ids equal llama.cpp's on the same file for three
# prompts (16 tokens each), or first differ at a near-tie: a step where our
# logits put llama.cpp's token within 1% of their range below ours (random
# toy weights give flat distributions; measured gaps were 0.00004-0.005 of
# ranges near 3.5, while a wrong kernel changes tokens by whole logits). --tp
# 2 and --pp 2 give the one-rank ids exactly. Skips, passing, when node or
# the fetched package is absent.
#
# Usage: llama_cpp_kquant_test.sh INFER LAUNCH MAKE_TOY_MODEL LLAMA_CPP_GENERATE_MJS LLAMA_QUANTIZE_PY NEAR_TIE_PY
set -u
source tests/test_lib.sh
INFER="$1" LAUNCH="$2" MAKE_TOY="$3" GENERATE="$(readlink -f "$4")" QUANTIZE="$5" NEAR_TIE="$6"
source tests/llama_cpp_lib.sh
llama_cpp_package
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/llama_cpp_kquant.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

"$MAKE_TOY" --format gguf --dtype f32 --dim 512 --hidden 640 --layers 2 --heads 4 --kv-heads 2 --vocab 512 \
  --seq-len 128 --out "$WORK/f32.gguf" >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
PROMPTS=("1" "1 300 301 302 303" "1 77 88 99 111 222 333 444 7")
TYPES=()
for type in q4_k_m q5_k_m q6_k; do
  model="$WORK/$type.gguf"
  if ! python3 "$QUANTIZE" --package "$PACKAGE" "$WORK/f32.gguf" "$model" "$type" >"$WORK/$type.log" 2>&1; then
    cat "$WORK/$type.log" >&2
    fail "$type: llama_model_quantize failed"
    continue
  fi
  TYPES+=("$type")
  for i in "${!PROMPTS[@]}"; do
    llama_cpp_case "$type.$i" "$model" "${PROMPTS[$i]}" 16 0.01
  done
  # The types llama.cpp chose, as our reader names them.
  echo "$type: $(grep -oE 'converting to [a-zA-Z0-9_]+' "$WORK/$type.log" | sort | uniq -c | tr -s ' \n' ' ')"
done
check_llama_cpp_cases
for type in "${TYPES[@]}"; do
  for i in "${!PROMPTS[@]}"; do
    one_rank="$(cat "$WORK/$type.$i.ours")"
    for grid in "--tp 2" "--pp 2"; do
      # shellcheck disable=SC2086
      if ! timeout 300 "$LAUNCH" -n 2 --timeout 240 --grace 2 -- "$INFER" --model "$WORK/$type.gguf" $grid \
          --prompt-ids "${PROMPTS[$i]}" --max-new-tokens 16 --output ids >"$WORK/grid.ids" 2>"$WORK/grid.err"; then
        cat "$WORK/grid.err" >&2
        fail "$type prompt $i $grid: infer failed"
      elif [ "$(cat "$WORK/grid.ids")" != "$one_rank" ]; then
        fail "$type prompt $i $grid: '$(cat "$WORK/grid.ids")', one rank '$one_rank'"
      fi
    done
  done
done
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
