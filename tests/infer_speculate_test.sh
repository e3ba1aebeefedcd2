#!/bin/bash
# Speculative decoding (--speculate K, prompt lookup) of //tools:infer under
# //tools:launch: on a prompt that repeats itself, the greedy token ids and
# every sampled-from logit vector (--dump-logits, bit for bit) equal the run
# without speculation (on 1 rank), at K = 1, 4 and 8, on 1 rank, with
# --pp 2 and --pp 3, with --tp 2 and --pp 2 --tp 2 (against the same grid
# without: tensor parallelism sums in another order), and with several
# micro-batched prompts (1 rank, --pp 3); the runs accept drafted tokens
# (else the check would not exercise them). The same where the context
# fills up (--context), and, on stories260K, where the model samples its
# stop token after drafts. Seeded sampling with speculation runs and is
# repeatable, on 1 rank and with --tp 2.
# With a draft model (--draft: a 2-layer toy model of the same vocabulary,
# or stories260K drafting for itself): greedy ids and logits equal the run
# without, on 1 rank and --pp 2 (--tp 2 and 2 x 2 against the same grid
# without), with drafts kept and (toy) drafts rejected; seeded sampling
# repeats itself, and gives the same on 1 rank and --pp 2; a draft of
# another vocabulary size, or without --speculate, is refused in one line
# naming it.
#
# Usage: infer_speculate_test.sh LAUNCH INFER MAKE_TOY_MODEL (toy | stories260K)
# With "stories260K" (../shared/models/stories260K.bin beside the checkout;
# skipped, passing, when absent).
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" MODEL_KIND="$4"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_speculate.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

case "$MODEL_KIND" in
  toy)
    "$MAKE_TOY" --out "$WORK/toy" --layers 4 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
    MODEL="$WORK/toy"
    "$MAKE_TOY" --out "$WORK/draft" --layers 2 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
    DRAFT="$WORK/draft"
    PART="79 111 99 101 32 117 112 111 110 32 97 32"
    STOPPING=()
    ;;
  stories260K)
    shared_model stories260K.bin
    DRAFT="$MODEL"
    PART="403 407 261 378 431 293 430 417 363 416 315 342"
    # Stops after 47 tokens.
    STOP_PART="461 461 401 401 401 461 378 455 473 456 435 299"
    STOPPING=(--prompt-ids "1 $STOP_PART $STOP_PART $STOP_PART")
    ;;
  *)
    echo "unknown model kind '$MODEL_KIND'" >&2
    exit 2
    ;;
esac
PROMPT=(--prompt-ids "1 $PART $PART $PART")
PROMPTS=(--prompt-ids "1 $PART $PART" --prompt-ids "1 $PART" --prompt-ids "1 72 105")

# run NAME WORLD ARGS...: infer_ids, 80 tokens, with --dump-logits.
run() { infer_ids "$1" "$2" --max-new-tokens 80 --dump-logits "$WORK/$1.logits" "${@:3}"; }

# same REFERENCE NAME: ids and logits files are identical and not empty.
same() {
  if [ ! -s "$WORK/$1.ids" ] || [ ! -s "$WORK/$1.logits" ]; then
    fail "$1: no ids or logits"
  elif ! cmp -s "$WORK/$1.ids" "$WORK/$2.ids"; then
    fail "$2: token ids differ from $1: $(tr '\n' '|' <"$WORK/$2.ids") vs $(tr '\n' '|' <"$WORK/$1.ids")"
  elif ! cmp -s "$WORK/$1.logits" "$WORK/$2.logits"; then
    fail "$2: logits differ from $1"
  fi
}

# accepted NAME: the drafted tokens run NAME kept (its statistics' line).
accepted() { sed -n 's/^speculation: [0-9]* drafted tokens, \([0-9]*\) accepted.*/\1/p' "$WORK/$1.err"; }

# drafts_kept NAME: run NAME kept some drafted tokens.
drafts_kept() {
  local kept
  kept="$(accepted "$1")"
  [ -n "$kept" ] && [ "$kept" -gt 0 ] || fail "$1: no drafted token was kept ($(grep speculation "$WORK/$1.err"))"
}

run plain 1 "${PROMPT[@]}"
for k in 1 4 8; do
  run "spec$k" 1 "${PROMPT[@]}" --speculate "$k" && same plain "spec$k" && drafts_kept "spec$k"
done
echo "1 rank: $(tr -d '\n' <"$WORK/plain.ids" | wc -w) tokens; kept drafts at K=4: $(accepted spec4)"

run context_plain 1 "${PROMPT[@]}" --context 60
run context_spec 1 "${PROMPT[@]}" --context 60 --speculate 8 && same context_plain context_spec
[ "$(wc -w <"$WORK/context_plain.ids")" -lt 80 ] || fail "--context 60 did not end the run early"
if [ ${#STOPPING[@]} -gt 0 ]; then
  run stop_plain 1 "${STOPPING[@]}"
  run stop_spec 1 "${STOPPING[@]}" --speculate 4 && same stop_plain stop_spec
  [ "$(wc -w <"$WORK/stop_plain.ids")" -lt 80 ] || fail "the stopping prompt did not stop"
fi

run pp2_spec 2 "${PROMPT[@]}" --pp 2 --speculate 4 && same plain pp2_spec && drafts_kept pp2_spec
run pp3_spec 3 "${PROMPT[@]}" --pp 3 --speculate 8 && same plain pp3_spec && drafts_kept pp3_spec

run tp_plain 2 "${PROMPT[@]}" --tp 2
run tp_spec 2 "${PROMPT[@]}" --tp 2 --speculate 4 && same tp_plain tp_spec && drafts_kept tp_spec

run batch_plain 1 "${PROMPTS[@]}"
run batch_spec 1 "${PROMPTS[@]}" --speculate 4 && same batch_plain batch_spec && drafts_kept batch_spec
run batch_pp3_spec 3 "${PROMPTS[@]}" --pp 3 --speculate 4 && same batch_plain batch_pp3_spec &&
  drafts_kept batch_pp3_spec
run batch_tp_spec 2 "${PROMPTS[@]}" --tp 2 --speculate 4
run batch_tp_plain 2 "${PROMPTS[@]}" --tp 2 && same batch_tp_plain batch_tp_spec
run grid_plain 4 "${PROMPT[@]}" --pp 2 --tp 2
run grid_spec 4 "${PROMPT[@]}" --pp 2 --tp 2 --speculate 4 && same grid_plain grid_spec && drafts_kept grid_spec

# Sampling: runs, keeps drafts (or not) and repeats itself with the seed.
for name in sample_a sample_b; do
  run "$name" 1 "${PROMPT[@]}" --speculate 4 --temperature 0.7 --seed 5
done
same sample_a sample_b
[ "$(wc -w <"$WORK/sample_a.ids")" -gt 0 ] || fail "sampling with speculation generated nothing"
# Under tensor parallelism the stage's ranks draw the same (gathered logits).
for name in tp_sample_a tp_sample_b; do
  run "$name" 2 "${PROMPT[@]}" --tp 2 --speculate 4 --temperature 0.7 --seed 5
done
same tp_sample_a tp_sample_b

# A draft model.
run draft_spec 1 "${PROMPT[@]}" --speculate 4 --draft "$DRAFT" && same plain draft_spec && drafts_kept draft_spec
run draft_pp2_spec 2 "${PROMPT[@]}" --pp 2 --speculate 4 --draft "$DRAFT" && same plain draft_pp2_spec &&
  drafts_kept draft_pp2_spec
drafted="$(sed -n 's/^speculation: \([0-9]*\) drafted.*/\1/p' "$WORK/draft_spec.err")"
echo "draft model: $drafted drafted, $(accepted draft_spec) kept"
if [ "$MODEL_KIND" = toy ] && [ "$(accepted draft_spec)" -ge "${drafted:-0}" ]; then
  fail "draft_spec: every draft was kept: rejections went unchecked"
fi
# Under tensor parallelism the leader broadcasts its drafts (against the same grid without).
run draft_tp_spec 2 "${PROMPT[@]}" --tp 2 --speculate 4 --draft "$DRAFT" && same tp_plain draft_tp_spec &&
  drafts_kept draft_tp_spec
run draft_grid_spec 4 "${PROMPT[@]}" --pp 2 --tp 2 --speculate 4 --draft "$DRAFT" && same grid_plain draft_grid_spec
for name in draft_tp_sample_a draft_tp_sample_b; do
  run "$name" 2 "${PROMPT[@]}" --tp 2 --speculate 4 --draft "$DRAFT" --temperature 0.7 --seed 5
done
same draft_tp_sample_a draft_tp_sample_b
run draft_batch_spec 1 "${PROMPTS[@]}" --speculate 4 --draft "$DRAFT" && same batch_plain draft_batch_spec
run draft_sample_a 1 "${PROMPT[@]}" --speculate 4 --draft "$DRAFT" --temperature 0.7 --seed 5
run draft_sample_b 2 "${PROMPT[@]}" --pp 2 --speculate 4 --draft "$DRAFT" --temperature 0.7 --seed 5
same draft_sample_a draft_sample_b
[ "$(wc -w <"$WORK/draft_sample_a.ids")" -gt 0 ] || fail "sampling with a draft model generated nothing"
# refused NAME WORLD MESSAGE ARGS...: infer fails, its error naming MESSAGE.
refused() {
  if timeout 60 "$LAUNCH" -n "$2" --timeout 30 --grace 2 -- "$INFER" --model "$MODEL" --output ids \
      --max-new-tokens 4 "${PROMPT[@]}" "${@:4}" >/dev/null 2>"$WORK/$1.err"; then
    fail "$1: infer ran"
  elif ! grep -q -- "$3" "$WORK/$1.err"; then
    fail "$1: the error does not say '$3': $(head -3 "$WORK/$1.err")"
  fi
}
"$MAKE_TOY" --out "$WORK/other_vocab" --layers 1 --vocab 600 >/dev/null || fail "make_toy_model --vocab 600"
refused draft_vocab 1 "the draft model's vocabulary has 600 tokens, the model's" --speculate 4 \
  --draft "$WORK/other_vocab"
refused draft_alone 1 "add --speculate K" --draft "$DRAFT"

[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
