#!/bin/bash
# llama.cpp as the reference for GGUF: stories260K.bin converted to GGUF
# (convert_to_gguf, F32) gives the same greedy token ids under llama.cpp
# (node-llama-cpp 3.21.1's prebuilt CPU build, tools/yardsticks; its KV cache
# in F32 as ours, not its default F16) as under //tools:infer, for two prompts;
# and toy GGUF files of each family we write (make_toy_model --format gguf:
# llama, qwen2 with q/k/v biases, qwen3 with q/k norms and its own head_dim,
# gemma3 with its norms, GeGLU and local/global layers, phi3 with fused
# projections, also with longrope, qwen3moe with 4 experts, 2 per token,
# also in Q8_0 and Q4_K;
# Mixtral, which llama.cpp reads as "llama" with experts)
# give llama.cpp's 16 greedy ids (or first differ at a near-tie in our
# logits, tests/near_tie.py). Skips, passing, when node or the fetched package
# (tools/yardsticks/fetch_llama_cpp.sh) is absent; the stories260K part
# when ../shared/models is.
#
# Usage: llama_cpp_yardstick_test.sh INFER CONVERT_TO_GGUF LLAMA_CPP_GENERATE_MJS MAKE_TOY_MODEL NEAR_TIE_PY
set -u
source tests/test_lib.sh
INFER="$1" CONVERT="$2" GENERATE="$(readlink -f "$3")" MAKE_TOY="$4" NEAR_TIE="$5"
source tests/llama_cpp_lib.sh
llama_cpp_package
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/llama_cpp.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# gemma3's local layers (every other one) see 8 positions of the 19; llama.cpp
# reads no window for phi3 (it disables Phi-3's), so that toy has none.
for family in "llama" "qwen2" "qwen3 --head-dim 32" "gemma3 --head-dim 32 --sliding-window 8" "phi3" \
  "qwen3_moe --head-dim 32 --experts 4 --experts-per-token 2 --expert-hidden 64 --norm-topk-prob" \
  "mixtral --experts 4 --experts-per-token 2"; do
  name="${family%% *}"
  # shellcheck disable=SC2086  # family holds the flags
  if ! "$MAKE_TOY" --format gguf --architecture $family --dim 64 --heads 4 --kv-heads 2 \
      --out "$WORK/$name.gguf" >/dev/null; then
    fail "$name: make_toy_model failed"
    continue
  fi
  llama_cpp_case "$name" "$WORK/$name.gguf" "1 72 101" 16 0.01
done
# Phi-3 with longrope (its factor tensors and keys, as llama.cpp's converter
# writes them; original context 256, which the 28 positions stay within, so
# both engines use the short factors). Factors up to 50: without them, our
# ids differ from the 6th on. Then a context past the original one (a
# 250-token prompt): both engines take the long factors for all of it, and
# the ids must be equal (with the short factors ours part at step 3 by a
# margin the near-tie rule would forgive).
if "$MAKE_TOY" --format gguf --architecture phi3 --rope-scaling longrope --rope-factor 50 --seq-len 512 \
  --dim 64 --heads 4 --kv-heads 2 --out "$WORK/phi3_longrope.gguf" >/dev/null; then
  llama_cpp_case phi3_longrope "$WORK/phi3_longrope.gguf" "1 72 101 108 108 111 32 119 111 114 108 100" 16 \
    0.01
  llama_cpp_case phi3_longrope_long "$WORK/phi3_longrope.gguf" "1 $(seq -s ' ' 3 251)" 16
else
  fail "phi3_longrope: make_toy_model failed"
fi
# The mixture of experts in 8-bit and K-quant blocks (its router stays f32).
for dtype in q8_0 q4_k; do
  if ! "$MAKE_TOY" --format gguf --dtype "$dtype" --architecture qwen3_moe --head-dim 32 --experts 4 \
      --experts-per-token 2 --expert-hidden 256 --norm-topk-prob --dim 256 --heads 4 --kv-heads 2 \
      --out "$WORK/qwen3_moe_$dtype.gguf" >/dev/null; then
    fail "qwen3_moe $dtype: make_toy_model failed"
    continue
  fi
  llama_cpp_case "qwen3_moe_$dtype" "$WORK/qwen3_moe_$dtype.gguf" "1 72 101" 16 0.01
done

# stories260K.bin from ../shared/models (absent in a fresh clone: that part
# does not run, and says so; the families above still count).
MODEL="${INFERNO_SHARED_MODELS:-$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")/shared/models}/stories260K.bin"
if [ -f "$MODEL" ]; then
  if "$CONVERT" --model "$MODEL" --out "$WORK/stories260K.gguf" >/dev/null; then
    llama_cpp_case story "$WORK/stories260K.gguf" "1" 64
    llama_cpp_case prompt "$WORK/stories260K.gguf" "1 403 407 261 378 431" 48
  else
    fail "convert_to_gguf of $MODEL"
  fi
else
  echo "not run: the stories260K part ($MODEL not found)"
fi
check_llama_cpp_cases
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
