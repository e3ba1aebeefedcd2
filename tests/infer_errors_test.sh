#!/bin/bash
# Bad input to //tools:infer under //tools:launch: every rank prints a clear
# one-line error naming the problem and exits non-zero — never a hang.
# Usage: infer_errors_test.sh LAUNCH INFER MAKE_TOY_MODEL
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_errors.XXXXXX")"

"$MAKE_TOY" --out "$WORK/toy" --layers 3 --seq-len 16 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }

# expect_error NAME WORLD PATTERN INFER_ARGS...:
# - under launch -n WORLD: a non-zero exit, no hang, and the error printed
#   (launch stops the other ranks as soon as the first one fails);
# - each rank alone (RANK/WORLD_SIZE set as launch sets them): a non-zero exit
#   and exactly one "infer: rank R: " line matching PATTERN. Input errors are
#   found before any networking, so no rank waits for another.
expect_error() {
  local name="$1" world="$2" pattern="$3"
  shift 3
  local out="$WORK/$name.out"
  timeout 120 "$LAUNCH" -n "$world" --tag-output --timeout 90 --grace 2 -- "$INFER" "$@" >"$out" 2>&1
  local status=$?
  if [ "$status" -eq 0 ]; then
    fail "$name: launch -n $world exited 0"
  elif [ "$status" -eq 124 ]; then
    fail "$name: launch -n $world hung"
  elif ! grep -q "^\[[0-9]*\] infer: rank [0-9]*: .*$pattern" "$out"; then
    fail "$name: launch -n $world printed no error matching '$pattern':"
    cat "$out" >&2
  fi
  for ((r = 0; r < world; r++)); do
    local rank_out="$WORK/$name.$r.err"
    RANK=$r WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=9 INFERNO_INSECURE=1 timeout 60 "$INFER" "$@" \
      >/dev/null 2>"$rank_out"
    status=$?
    if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then
      fail "$name: rank $r of $world exited with status $status"
    fi
    if [ "$(grep -c "^infer: rank $r: " "$rank_out")" -ne 1 ] || ! grep -q "^infer: rank $r: .*$pattern" "$rank_out"; then
      fail "$name: rank $r of $world did not print one error line matching '$pattern':"
      cat "$rank_out" >&2
    fi
  done
}

expect_error unknown_flag 2 "unknown flag --bogus" --model "$WORK/toy" --prompt hi --bogus 1
expect_error missing_prompt 2 "a prompt is required" --model "$WORK/toy"
expect_error prompt_too_long 2 "prompt 0 has 21 tokens, longer than the context of 16 positions" \
  --model "$WORK/toy" --prompt "twenty letters long!"
expect_error id_outside_vocab 2 "token id 300 is outside the vocabulary \[0, 259)" \
  --model "$WORK/toy" --prompt-ids "1 300"
expect_error world_exceeds_layers 4 "world size 4: .*3" --model "$WORK/toy" --prompt hi
expect_error bad_layer_split 2 "world size 2: " --model "$WORK/toy" --prompt hi --layers 1,1
expect_error tp_not_dividing_world 4 "--tp 3 does not divide the job's 4 ranks" --model "$WORK/toy" --prompt hi --tp 3
expect_error tp_above_heads 5 "world size 5: --tp 5 exceeds the 4 attention heads of the model" \
  --model "$WORK/toy" --prompt hi --tp 5
expect_error grid_not_world 3 "--pp 2 x --tp 1 is 2 ranks, but the job has 3" --model "$WORK/toy" --prompt hi \
  --pp 2
expect_error missing_model 2 "--model: " --model "$WORK/nowhere" --prompt hi
expect_error bad_number 2 "--top-p: 2 is outside" --model "$WORK/toy" --prompt hi --top-p 2
expect_error tiny_temperature 2 "--temperature: 1e-40 is below 0.001" --model "$WORK/toy" --prompt hi --temperature 1e-40
expect_error endless_prompts_file 2 "--prompts-file '/dev/zero' is longer than --max-prompt-bytes 1048576" \
  --model "$WORK/toy" --prompts-file /dev/zero
expect_error long_prompt 2 "--prompt is longer than --max-prompt-bytes 4" --model "$WORK/toy" --prompt hello \
  --max-prompt-bytes 4

# Tokenizers and configs (issue 13): a folder without tokenizer.json, a
# malformed tokenizer.json, a model whose vocabulary needs a tokenizer it was
# not given, an architecture and a config field the engine does not
# implement, a context beyond the model's.
expect_error tokenizer_folder 2 "--tokenizer: the folder '$WORK' holds no tokenizer.json" \
  --model "$WORK/toy" --prompt hi --tokenizer "$WORK"
printf '{"model": ' >"$WORK/bad.json"
expect_error bad_tokenizer_json 2 "Corruption: $WORK/bad.json" --model "$WORK/toy" --prompt hi --tokenizer "$WORK/bad.json"
"$MAKE_TOY" --out "$WORK/vocab512" --layers 3 --seq-len 16 --vocab 512 >/dev/null || fail "make_toy_model --vocab 512"
expect_error no_tokenizer 2 "no tokenizer.json beside the model, whose vocabulary has 512 tokens" \
  --model "$WORK/vocab512" --prompt hi
# with_config NAME PYTHON: a copy of the toy model whose config.json PYTHON
# (a statement on the dict c) has changed.
with_config() {
  mkdir -p "$WORK/$1" && cp "$WORK/toy/model.safetensors" "$WORK/$1/" &&
    python3 -c "import json, sys; c = json.load(open(sys.argv[1])); $2; json.dump(c, open(sys.argv[2], 'w'))" \
      "$WORK/toy/config.json" "$WORK/$1/config.json" || fail "$1: writing config.json"
}
with_config gpt2 'c["architectures"] = ["GPT2LMHeadModel"]'
expect_error unsupported_architecture 2 "Unimplemented: .*architecture 'GPT2LMHeadModel' is not supported" \
  --model "$WORK/gpt2" --prompt hi
with_config yarn 'c["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0}'
expect_error unsupported_rope_scaling 2 "rope_scaling .*type 'yarn' is not supported" --model "$WORK/yarn" --prompt hi
with_config unknown_field 'c["quantization_config"] = {"bits": 4}'
expect_error unknown_config_field 2 "field 'quantization_config' is not supported" --model "$WORK/unknown_field" --prompt hi
expect_error chat_without_template 2 "--chat: byte-level has no tokenizer_config.json with a chat_template" \
  --model "$WORK/toy" --chat hi
printf '{%% for m in messages %%}{{ m.content | frobnicate }}{%% endfor %%}' >"$WORK/bad.jinja"
expect_error chat_template_unknown_filter 2 "$WORK/bad.jinja: .*frobnicate" --model "$WORK/toy" --chat hi \
  --chat-template "$WORK/bad.jinja"
expect_error system_without_chat 2 "--system and --chat-template apply to --chat messages" --model "$WORK/toy" \
  --prompt hi --system "Be brief."
expect_error context_beyond_model 2 "--context 17 exceeds the model's 16 positions" --model "$WORK/toy" --prompt hi \
  --context 17

# Ranks that would compute different things (here: another model of the same
# shape, another temperature, logits dumped by one rank) refuse to start together: every rank
# prints one line naming both ranks and what differs.
"$MAKE_TOY" --out "$WORK/toy2" --layers 3 --seq-len 16 --seed 2 >/dev/null || fail "make_toy_model --seed 2"
# Both ranks run by hand (under launch, the first rank to fail gets the other
# killed before it prints), meeting at a free port rank 0 is given, with a
# secret exported on both as under mpirun.
expect_mismatch() {
  local name="$1" pattern="$2" rank1_args="$3"
  shift 3
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for r in 0 1; do
    local extra=()
    # shellcheck disable=SC2206
    [ "$r" -eq 1 ] && extra=($rank1_args)
    RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port INFERNO_RENDEZVOUS_TIMEOUT_MS=20000 \
      INFERNO_JOB_SECRET=$(printf '%064d' 5) \
      timeout 60 "$INFER" "$@" "${extra[@]}" >/dev/null 2>"$WORK/$name.$r.err" &
  done
  for r in 0 1; do
    wait -n
    local status=$?
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "$name: a rank exited with status $status"
  done
  for r in 0 1; do
    if [ "$(grep -c "^infer: rank $r: " "$WORK/$name.$r.err")" -ne 1 ] ||
      ! grep -q "^infer: rank $r: .*$pattern" "$WORK/$name.$r.err"; then
      fail "$name: rank $r did not print one line matching '$pattern': $(cat "$WORK/$name.$r.err")"
    fi
  done
}
expect_mismatch other_model "rank 1 and rank 0 run different things: weights is '[0-9a-f]*' on rank 1" \
  "--model $WORK/toy2" --model "$WORK/toy" --prompt hi --max-new-tokens 4
expect_mismatch other_temperature "rank 1 and rank 0 run different things: generation is .*temperature=0.5" \
  "--temperature 0.5" --model "$WORK/toy" --prompt hi --max-new-tokens 4
# --dump-logits on one rank only: it picks how the ranks exchange their picks.
expect_mismatch one_rank_dumps_logits "rank 1 and rank 0 run different things: generation is .*report_logits=1" \
  "--dump-logits $WORK/one_rank.logits" --model "$WORK/toy" --prompt hi --max-new-tokens 4

# A rank started by hand without a secret, and without asking for an
# insecure job, refuses to start: one line saying what to do.
RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=9 timeout 60 env -u INFERNO_JOB_SECRET -u INFERNO_INSECURE \
  "$INFER" --model "$WORK/toy" --prompt hi >/dev/null 2>"$WORK/no_secret.err"
status=$?
[ "$status" -eq 2 ] || fail "no_secret: rank exited with status $status, want 2"
[ "$(cat "$WORK/no_secret.err")" = "infer: InvalidArgument: a job of 2 ranks needs a secret: export INFERNO_JOB_SECRET=\$(job_key) on every rank (launch does it for you) or a file only you can read that holds it in INFERNO_JOB_SECRET_FILE, or set INFERNO_INSECURE=1 to let anyone who reaches a rank join" ] ||
  fail "no_secret: '$(cat "$WORK/no_secret.err")'"

if [ "$FAILURES" -ne 0 ]; then
  echo "$FAILURES failures" >&2
  exit 1
fi
rm -rf "$WORK"
echo "PASS: every bad input failed cleanly on every rank"
