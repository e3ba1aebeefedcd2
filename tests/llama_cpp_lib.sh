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

# llama_cpp_case NAME MODEL PROMPT TOKENS [TIE_FRACTION]: queues a comparison
# of MODEL's (a GGUF file) greedy ids for PROMPT, TOKENS new tokens, between
# //tools:infer (one rank) and llama.cpp (1 thread, F32 KV cache as ours);
# check_llama_cpp_cases runs the queue.
LLAMA_CPP_CASES=()
llama_cpp_case() {
  LLAMA_CPP_CASES+=("$1")
  printf '%s\t%s\t%s\n' "$2" "$3" "$4" >>"$WORK/llama_cpp.jobs"
  printf '%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "${5:-}" >"$WORK/$1.case"
}

# check_llama_cpp_cases: llama.cpp's ids for every queued case, from one node
# process (each start costs about 2.6 s of CPU, more than a toy model's
# generation), then inferno's; counts a failed check for each case where they
# differ — with TIE_FRACTION, unless the first difference is a near-tie in
# our logits (tests/near_tie.py, which $NEAR_TIE names). Leaves each case's
# ids in $WORK/NAME.ours and empties the queue.
check_llama_cpp_cases() {
  [ "${#LLAMA_CPP_CASES[@]}" -gt 0 ] || return
  local all_llama="$WORK/llama_cpp.out" ok=1
  if ! timeout 600 node "$GENERATE" --package "$PACKAGE" --jobs "$WORK/llama_cpp.jobs" --threads 1 \
      --kv-cache F32 >"$all_llama" 2>"$WORK/llama_cpp.err"; then
    cat "$WORK/llama_cpp.err" >&2
    fail "llama.cpp failed (cases ${LLAMA_CPP_CASES[*]})"
    ok=0
  fi
  local index name model prompt tokens tie ours llama
  for index in "${!LLAMA_CPP_CASES[@]}"; do
    name="${LLAMA_CPP_CASES[$index]}"
    IFS=$'\t' read -r model prompt tokens tie <"$WORK/$name.case"
    if ! timeout 120 "$INFER" --model "$model" --prompt-ids "$prompt" --max-new-tokens "$tokens" \
        --output ids --dump-logits "$WORK/$name.logits" >"$WORK/$name.ours" 2>"$WORK/$name.ours.err"; then
      cat "$WORK/$name.ours.err" >&2
      fail "$name: infer failed"
      continue
    fi
    [ "$ok" -eq 1 ] || continue
    ours="$(tr -s ' \n' ' ' <"$WORK/$name.ours" | sed 's/ $//')"
    llama="$(sed -n "$((index + 1))p" "$all_llama")"
    if [ -z "$ours" ]; then
      fail "$name: infer generated nothing"
    elif [ "$ours" != "$llama" ]; then
      if [ -z "$tie" ] || ! python3 "$NEAR_TIE" "$WORK/$name.ours" "$llama" "$WORK/$name.logits" "$tie"; then
        fail "$name: llama.cpp generated '$llama', inferno '$ours'"
      fi
    fi
  done
  LLAMA_CPP_CASES=()
  rm -f "$WORK/llama_cpp.jobs"
}
