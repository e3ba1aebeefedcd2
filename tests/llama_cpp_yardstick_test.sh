#!/bin/bash
# llama.cpp as the reference for GGUF: stories260K.bin converted to GGUF
# (convert_to_gguf, F32) gives the same greedy token ids under llama.cpp
# (node-llama-cpp 3.21.1's prebuilt CPU build, tools/yardsticks; its KV cache
# in F32 as ours, not its default F16) as under //tools:infer, for two prompts. Skips, passing, when node, the fetched
# package (tools/yardsticks/fetch_llama_cpp.sh) or ../shared/models is absent.
#
# Usage: llama_cpp_yardstick_test.sh INFER CONVERT_TO_GGUF LLAMA_CPP_GENERATE_MJS
set -u
source tests/test_lib.sh
INFER="$1" CONVERT="$2" GENERATE="$(readlink -f "$3")"
PACKAGE="${INFERNO_CACHE:-$(getent passwd "$(id -u)" | cut -d: -f6)/.cache/inferno}/yardsticks/node-llama-cpp-3.21.1"
if ! command -v node >/dev/null 2>&1 || [ ! -d "$PACKAGE/node_modules/@node-llama-cpp/linux-x64" ]; then
  skip "node or $PACKAGE absent (run tools/yardsticks/fetch_llama_cpp.sh)"
fi
shared_model stories260K.bin
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/llama_cpp.XXXXXX")"
"$CONVERT" --model "$MODEL" --out "$WORK/stories260K.gguf" >/dev/null || { echo "FAIL: convert_to_gguf" >&2; exit 1; }

check() {
  local name="$1" prompt="$2" tokens="$3"
  if ! timeout 120 "$INFER" --model "$WORK/stories260K.gguf" --prompt-ids "$prompt" --max-new-tokens "$tokens" \
      --output ids >"$WORK/$name.ours" 2>"$WORK/$name.ours.err"; then
    cat "$WORK/$name.ours.err" >&2
    fail "$name: infer failed"
    return
  fi
  if ! timeout 120 node "$GENERATE" --package "$PACKAGE" --model "$WORK/stories260K.gguf" --prompt-ids "$prompt" \
      --max-new-tokens "$tokens" --threads 1 --kv-cache F32 >"$WORK/$name.llama" 2>"$WORK/$name.llama.err"; then
    cat "$WORK/$name.llama.err" >&2
    fail "$name: llama.cpp failed"
    return
  fi
  local ours llama
  ours="$(tr -s ' \n' ' ' <"$WORK/$name.ours" | sed 's/ $//')"
  llama="$(head -n 1 "$WORK/$name.llama")"
  if [ -z "$ours" ] || [ "$ours" != "$llama" ]; then
    fail "$name: llama.cpp generated '$llama', inferno '$ours'"
  fi
}
check story "1" 64
check prompt "1 403 407 261 378 431" 48
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
