# Helpers of the tests that compare inferno with llama.cpp (node-llama-cpp
# 3.21.1's prebuilt CPU build, fetched by tools/yardsticks/fetch_llama_cpp.sh).
# Source after tests/test_lib.sh; needs INFER, GENERATE (llama_cpp_generate.mjs)
# and WORK set.

# llama_cpp_package: sets PACKAGE to the fetched node-llama-cpp folder; when it
# (or node) is absent, the test skips (test_lib.sh's skip).
llama_cpp_package() {
  PACKAGE="${INFERNO_CACHE:-$(getent passwd "$(id -u)" | cut -d: -f6)/.cache/inferno}/yardsticks/node-llama-cpp-3.21.1"
  if ! command -v node >/dev/null 2>&1 || [ ! -d "$PACKAGE/node_modules/@node-llama-cpp/linux-x64" ]; then
    skip "node or $PACKAGE absent (run tools/yardsticks/fetch_llama_cpp.sh)"
  fi
}

# agrees_with_llama_cpp NAME MODEL PROMPT TOKENS [TIE_FRACTION]: greedy ids of
# MODEL (a GGUF file) for PROMPT, TOKENS new tokens, from //tools:infer (one
# rank) and from llama.cpp (1 thread, F32 KV cache as ours); counts a failed
# check when they differ — with TIE_FRACTION, unless the first difference is
# a near-tie in our logits (tests/near_tie.py, which $NEAR_TIE names). Leaves
# the ids in $WORK/NAME.ours.
agrees_with_llama_cpp() {
  local name="$1" model="$2" prompt="$3" tokens="$4" tie="${5:-}"
  if ! timeout 120 "$INFER" --model "$model" --prompt-ids "$prompt" --max-new-tokens "$tokens" \
      --output ids --dump-logits "$WORK/$name.logits" >"$WORK/$name.ours" 2>"$WORK/$name.ours.err"; then
    cat "$WORK/$name.ours.err" >&2
    fail "$name: infer failed"
    return
  fi
  if ! timeout 120 node "$GENERATE" --package "$PACKAGE" --model "$model" --prompt-ids "$prompt" \
      --max-new-tokens "$tokens" --threads 1 --kv-cache F32 >"$WORK/$name.llama" 2>"$WORK/$name.llama.err"; then
    cat "$WORK/$name.llama.err" >&2
    fail "$name: llama.cpp failed"
    return
  fi
  local ours llama
  ours="$(tr -s ' \n' ' ' <"$WORK/$name.ours" | sed 's/ $//')"
  llama="$(head -n 1 "$WORK/$name.llama")"
  if [ -z "$ours" ]; then
    fail "$name: infer generated nothing"
  elif [ "$ours" != "$llama" ]; then
    if [ -z "$tie" ] || ! python3 "$NEAR_TIE" "$WORK/$name.ours" "$llama" "$WORK/$name.logits" "$tie"; then
      fail "$name: llama.cpp generated '$llama', inferno '$ours'"
    fi
  fi
}
