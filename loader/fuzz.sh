#!/bin/bash
# Runs the loader's libFuzzer targets (safetensors header parser, llama2.c
# header reader) under ASan + UBSan for a bounded time each, starting from the
# seed corpus in loader/testdata/fuzz (copied: the repository is not modified).
#
#   loader/fuzz.sh [SECONDS_PER_TARGET]     (default 15: about 30 s in all)
#
# Bazel startup options (e.g. --output_base=...) come from $BAZEL_STARTUP.
# Exits non-zero if a target finds a crash; the reproducer is left in $WORK.
set -euo pipefail
SECONDS_PER_TARGET="${1:-15}"
BAZEL=(bazel ${BAZEL_STARTUP:-})
cd "$(dirname "$0")/.."
"${BAZEL[@]}" build --config=fuzz //loader:safetensors_header_fuzzer //loader:llama2c_header_fuzzer >&2
BIN="$("${BAZEL[@]}" info --config=fuzz bazel-bin 2> /dev/null)/loader"
WORK="$(mktemp -d)"
trap 'echo "a fuzzer failed; its reproducer (crash-*) is in $WORK" >&2' ERR
for target in safetensors llama2c; do
  mkdir -p "$WORK/$target"
  cp loader/testdata/fuzz/$target/* "$WORK/$target/"
  echo "fuzzing ${target}_header_fuzzer for ${SECONDS_PER_TARGET}s" >&2
  (cd "$WORK" && "$BIN/${target}_header_fuzzer" "$WORK/$target" -max_total_time="$SECONDS_PER_TARGET" \
    -print_final_stats=1 2>&1 | grep -E "^(Done|stat::number_of_executed_units)|ERROR|SUMMARY" >&2)
done
rm -rf "$WORK"
echo "no crash" >&2
