#!/bin/bash
# GGUF models through //tools:infer and //tools:shard:
# - the toy model written as GGUF (F32) gives the same token ids and logits,
#   bit for bit, as the same toy model as safetensors, on 1 rank and on
#   2-rank grids (--pp 2, --tp 2), with the text prompt encoded by the GGUF's
#   embedded tokenizer; its shards (shard --model FILE.gguf) give the same;
# - the toy model as Q8_0 and Q4_0 GGUF gives on --pp 2 the ids and logits
#   of 1 rank, and on --tp 2 its greedy ids (tensor-parallel sums partial
#   products in another order: logits agree within rounding, which
#   infer_tensor_parallel_test bounds), used in place (--weights mapped) the
#   ids and logits of 1 rank, and the Q8_0 file's shards the same;
# - Gemma 3 and Phi-3 toys the same way (see below);
# - stories260K.bin converted to GGUF (convert_to_gguf, F32) gives the same
#   greedy token ids as the .bin, on 1 and 2 ranks (skipped without
#   ../shared/models).
#
# Usage: infer_gguf_test.sh LAUNCH INFER MAKE_TOY_MODEL SHARD CONVERT_TO_GGUF
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" SHARD="$4" CONVERT="$5"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_gguf.XXXXXX")"

# same A B: ids files equal and not empty, and logits too when both exist.
same() {
  if [ ! -s "$WORK/$1.ids" ]; then
    fail "$1: no ids"
  elif ! cmp -s "$WORK/$1.ids" "$WORK/$2.ids"; then
    fail "$2: token ids differ from $1: $(tr '\n' '|' <"$WORK/$2.ids") vs $(tr '\n' '|' <"$WORK/$1.ids")"
  elif [ -f "$WORK/$1.logits" ] && [ -f "$WORK/$2.logits" ] && ! cmp -s "$WORK/$1.logits" "$WORK/$2.logits"; then
    fail "$2: logits differ from $1"
  fi
}
run() { infer_ids "$1" "$2" --dump-logits "$WORK/$1.logits" "${@:3}"; }

"$MAKE_TOY" --out "$WORK/toy" >/dev/null || fail "make_toy_model (safetensors)"
for dtype in f32 q8_0 q4_0; do
  "$MAKE_TOY" --format gguf --dtype "$dtype" --out "$WORK/toy_$dtype.gguf" >/dev/null || fail "make_toy_model --dtype $dtype"
done
ARGS=(--prompt "Once upon a time" --max-new-tokens 16)
MODEL="$WORK/toy"; run st-1 1 "${ARGS[@]}" --tokenizer byte-level
MODEL="$WORK/toy_f32.gguf"; run gguf-1 1 "${ARGS[@]}" && same st-1 gguf-1
MODEL="$WORK/toy_f32.gguf"; run gguf-pp2 2 "${ARGS[@]}" && same st-1 gguf-pp2
MODEL="$WORK/toy_f32.gguf"; run gguf-tp2 2 --tp 2 "${ARGS[@]}"
MODEL="$WORK/toy"; run st-tp2 2 --tp 2 "${ARGS[@]}" --tokenizer byte-level && same st-tp2 gguf-tp2
if "$SHARD" --model "$WORK/toy_f32.gguf" --pp 2 --out "$WORK/shards" 2>"$WORK/shard.err"; then
  run gguf-shards 2 --shards "$WORK/shards" --tokenizer "$WORK/toy_f32.gguf" "${ARGS[@]}" && same st-1 gguf-shards
else
  cat "$WORK/shard.err" >&2
  fail "shard --model toy_f32.gguf"
fi
for dtype in q8_0 q4_0; do
  MODEL="$WORK/toy_$dtype.gguf"; run "$dtype-1" 1 "${ARGS[@]}"
  MODEL="$WORK/toy_$dtype.gguf"; run "$dtype-pp2" 2 "${ARGS[@]}" && same "$dtype-1" "$dtype-pp2"
  MODEL="$WORK/toy_$dtype.gguf"; infer_ids "$dtype-tp2" 2 --tp 2 "${ARGS[@]}" && same "$dtype-1" "$dtype-tp2"
  MODEL="$WORK/toy_$dtype.gguf"; run "$dtype-mapped" 1 --weights mapped "${ARGS[@]}" && same "$dtype-1" "$dtype-mapped"
done
# A Q8_0 GGUF sharded keeps its type (shard copies the blocks) and gives the
# ids and logits of the file itself.
if "$SHARD" --model "$WORK/toy_q8_0.gguf" --pp 2 --out "$WORK/shards_q8_0" 2>"$WORK/shard_q8_0.err"; then
  grep -q '"dtype": "Q8_0"' "$WORK/shards_q8_0/manifest.json" || fail "shards of toy_q8_0.gguf: the manifest records no Q8_0"
  run q8_0-shards 2 --shards "$WORK/shards_q8_0" --tokenizer "$WORK/toy_q8_0.gguf" "${ARGS[@]}" && same q8_0-1 q8_0-shards
else
  cat "$WORK/shard_q8_0.err" >&2
  fail "shard --model toy_q8_0.gguf"
fi

# Gemma 3 and Phi-3: the toy model as GGUF (Gemma's norms stored as
# 1 + weight, Phi-3's projections fused as llama.cpp stores them) gives the
# safetensors folder's ids and logits bit for bit, on 1 rank and --tp 2, and
# so do its tensor-parallel shards and the folder's pipeline shards (Phi-3's
# fused tensors cut into their parts).
for family in "gemma3 --head-dim 16 --sliding-window 6" "phi3 --sliding-window 7"; do
  name="${family%% *}"
  # shellcheck disable=SC2086  # family holds the flags
  "$MAKE_TOY" --architecture $family --out "$WORK/$name" >/dev/null || fail "$name: make_toy_model"
  # shellcheck disable=SC2086
  "$MAKE_TOY" --architecture $family --format gguf --out "$WORK/$name.gguf" >/dev/null ||
    fail "$name: make_toy_model --format gguf"
  MODEL="$WORK/$name"; run "$name-st-1" 1 "${ARGS[@]}" --tokenizer byte-level
  MODEL="$WORK/$name.gguf"; run "$name-gguf-1" 1 "${ARGS[@]}" && same "$name-st-1" "$name-gguf-1"
  MODEL="$WORK/$name"; run "$name-st-tp2" 2 --tp 2 "${ARGS[@]}" --tokenizer byte-level
  MODEL="$WORK/$name.gguf"; run "$name-gguf-tp2" 2 --tp 2 "${ARGS[@]}" && same "$name-st-tp2" "$name-gguf-tp2"
  if "$SHARD" --model "$WORK/$name.gguf" --pp 1 --tp 2 --out "$WORK/$name-tp-shards" 2>"$WORK/$name.shard.err" &&
    "$SHARD" --model "$WORK/$name" --pp 2 --out "$WORK/$name-pp-shards" 2>>"$WORK/$name.shard.err"; then
    run "$name-gguf-shards" 2 --shards "$WORK/$name-tp-shards" --tokenizer "$WORK/$name.gguf" "${ARGS[@]}" &&
      same "$name-st-tp2" "$name-gguf-shards"
    run "$name-st-shards" 2 --shards "$WORK/$name-pp-shards" --tokenizer byte-level "${ARGS[@]}" &&
      same "$name-st-1" "$name-st-shards"
  else
    cat "$WORK/$name.shard.err" >&2
    fail "$name: shard"
  fi
done

if [ -f "${INFERNO_SHARED_MODELS:-$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")/shared/models}/stories260K.bin" ]; then
  shared_model stories260K.bin
  BIN="$MODEL"
  "$CONVERT" --model "$BIN" --out "$WORK/stories260K.gguf" >/dev/null || fail "convert_to_gguf stories260K.bin"
  IDS=(--prompt-ids "1 403 407 261 378 431" --max-new-tokens 48)
  MODEL="$BIN"; infer_ids bin-1 1 "${IDS[@]}"
  MODEL="$WORK/stories260K.gguf"; infer_ids s260-1 1 "${IDS[@]}" && same bin-1 s260-1
  MODEL="$WORK/stories260K.gguf"; infer_ids s260-pp2 2 "${IDS[@]}" && same bin-1 s260-pp2
else
  echo "SKIP: stories260K.bin not found; the llama2.c -> GGUF check did not run"
fi
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
