#!/bin/bash
# Builds every libFuzzer target with --config=fuzz (clang 14, ASan + UBSan)
# and runs each for SECONDS, starting from a copy of its seed corpus in the
# repository (the repository is not modified). Prints one line per target:
#   <target> <seconds> <executions> <corpus files at end> <result>
#
#   tools/run_fuzzers.sh [SECONDS]        (default 30 per target)
#
# Bazel startup options (e.g. --output_base=...) come from $BAZEL_STARTUP,
# extra build options (e.g. --define=...) from $BAZEL_BUILD_FLAGS.
# Exits non-zero if any target crashes, leaks or times out; the reproducer
# (crash-*, leak-*, timeout-*) and the log stay in the printed folder — copy
# the reproducer into the seed corpus so the *_corpus_test replays it.
set -uo pipefail
SECONDS_PER_TARGET="${1:-30}"
BAZEL=(bazel ${BAZEL_STARTUP:-})
cd "$(dirname "$0")/.."

# target  seed corpus
FUZZERS=(
  "//distributed:frame_header_fuzzer distributed/testdata/fuzz/frame_header"
  "//loader:safetensors_header_fuzzer loader/testdata/fuzz/safetensors"
  "//loader:llama2c_header_fuzzer loader/testdata/fuzz/llama2c"
  "//loader:gguf_fuzzer loader/testdata/fuzz/gguf"
  "//loader:manifest_fuzzer loader/testdata/fuzz/manifest"
  "//text:tokenizer_fuzzer text/testdata/fuzz/tokenizer"
  "//text/hf_tokenizer:hf_tokenizer_fuzzer text/hf_tokenizer/testdata/fuzz"
  "//server:openai_request_fuzzer server/testdata/fuzz/openai_request"
)
targets=()
for entry in "${FUZZERS[@]}"; do targets+=("${entry%% *}"); done
# shellcheck disable=SC2086  # a list of flags
"${BAZEL[@]}" build --config=fuzz ${BAZEL_BUILD_FLAGS:-} "${targets[@]}" >&2 || exit 1
BIN="$("${BAZEL[@]}" info --config=fuzz bazel-bin 2>/dev/null)"
WORK="$(mktemp -d)"
failed=0
for entry in "${FUZZERS[@]}"; do
  target="${entry%% *}" seeds="${entry#* }"
  name="${target##*:}" binary="$BIN/$(echo "${target#//}" | tr ':' '/')"
  mkdir -p "$WORK/$name/corpus"
  cp "$seeds"/* "$WORK/$name/corpus/"
  (cd "$WORK/$name" && TEST_TMPDIR="$WORK/$name" "$binary" corpus -max_total_time="$SECONDS_PER_TARGET" \
    -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=512 -print_final_stats=1 >log 2>&1)
  status=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/$name/log")
  result=ok
  if [ "$status" -ne 0 ]; then
    result="FAILED (status $status; see $WORK/$name/log)"
    failed=1
    # The folder may be gone when the log is read (a CI machine), so the
    # finding itself goes to stderr: the check or sanitizer line, the
    # summary, and the input in Base64.
    grep -E 'Check failed|ERROR: |SUMMARY: |^Base64: ' "$WORK/$name/log" | cut -c1-400 >&2
  fi
  echo "$name ${SECONDS_PER_TARGET}s ${executions:-?} execs $(ls "$WORK/$name/corpus" | wc -l) corpus $result"
done
if [ "$failed" -eq 0 ]; then rm -rf "$WORK"; else echo "logs and reproducers: $WORK" >&2; fi
exit "$failed"
