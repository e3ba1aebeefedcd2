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
source tests/llama_cpp_lib.sh
llama_cpp_package
shared_model stories260K.bin
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/llama_cpp.XXXXXX")"
"$CONVERT" --model "$MODEL" --out "$WORK/stories260K.gguf" >/dev/null || { echo "FAIL: convert_to_gguf" >&2; exit 1; }

agrees_with_llama_cpp story "$WORK/stories260K.gguf" "1" 64
agrees_with_llama_cpp prompt "$WORK/stories260K.gguf" "1 403 407 261 378 431" 48
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
