#!/bin/bash
# //tools:infer on synthetic checkpoints of each Llama-family layout, on 1
# rank, 2 pipeline stages and 2 tensor-parallel ranks, against an independent
# plain-Python forward pass of the Hugging Face layout (hf_reference.py): the
# same greedy ids, logits within 1e-4. Families: Llama 3.1 style (GQA,
# rope_scaling llama3, tied embeddings), Qwen2 (q/k/v biases, head_dim !=
# hidden / heads), Qwen3 (q and k norms, head_dim != hidden / heads), Llama
# with attention_bias and linear RoPE scaling, Mistral, Phi-3 with longrope
# (within its original context); and over 320 positions Qwen3, windowed
# Mistral, Gemma 3 and Phi-3. Prompt plus generation
# run past the scaled RoPE's original context, so scaling matters.
# Usage: infer_vs_hf_reference_test.sh LAUNCH INFER MAKE_TOY_MODEL REFERENCE_PY COMPARE_PY
set -u
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" REFERENCE="$4" COMPARE="$5"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_vs_hf_reference.XXXXXX")"
STEPS=14
PROMPT="1 72 101 108 108 111 44 32 119"
SEQ_LEN=64
FAILURES=0

check_family() {
  local name="$1"
  shift
  if ! "$MAKE_TOY" --out "$WORK/$name" --dim 32 --layers 3 --heads 4 --seq-len "$SEQ_LEN" "$@" >/dev/null; then
    echo "FAIL: $name: make_toy_model $*" >&2
    FAILURES=$((FAILURES + 1))
    return
  fi
  # shellcheck disable=SC2086  # the prompt is a list of ids
  if ! python3 "$REFERENCE" "$WORK/$name" "$STEPS" $PROMPT >"$WORK/$name.reference"; then
    echo "FAIL: $name: reference failed" >&2
    FAILURES=$((FAILURES + 1))
    return
  fi
  for grid in "1" "2 --pp 2" "2 --tp 2"; do
    local world="${grid%% *}" flags="" run="${grid// /}"
    [ "$world" != "$grid" ] && flags="${grid#* }"
    # shellcheck disable=SC2086  # flags is a list of flags
    if ! timeout 120 "$LAUNCH" -n "$world" --timeout 90 --grace 2 -- "$INFER" --model "$WORK/$name" $flags \
        --prompt-ids "$PROMPT" --max-new-tokens "$STEPS" --output ids --dump-logits "$WORK/$name.logits.$run" \
        >"$WORK/$name.ids.$run" 2>"$WORK/$name.err.$run"; then
      cat "$WORK/$name.err.$run" >&2
      echo "FAIL: $name: infer on $world ranks ($flags) failed" >&2
      FAILURES=$((FAILURES + 1))
      continue
    fi
    python3 "$COMPARE" "$WORK/$name.reference" "$WORK/$name.ids.$run" "$WORK/$name.logits.$run" \
      "$name on $world ranks $flags" || FAILURES=$((FAILURES + 1))
  done
}

check_family llama3 --kv-heads 2 --rope-scaling llama3
check_family qwen2 --kv-heads 2 --architecture qwen2 --head-dim 12
check_family llama_bias --kv-heads 4 --attention-bias --rope-scaling linear --rope-factor 2
check_family mistral --kv-heads 1 --architecture mistral
check_family phi3_longrope --kv-heads 2 --architecture phi3 --rope-scaling longrope --rope-factor 3

# Qwen3 and the sliding families over 320 positions: a 100-token prompt (two prefill
# chunks) and 220 generated tokens, so a window of 5-7 positions wraps its
# layers' caches (window + 63 positions) several times, in prefill and decode.
STEPS=220
PROMPT="$(seq -s ' ' 3 102)"
SEQ_LEN=320
check_family qwen3 --kv-heads 2 --architecture qwen3 --head-dim 16
check_family mistral_window --kv-heads 1 --architecture mistral --sliding-window 6
check_family gemma3 --kv-heads 2 --architecture gemma3 --head-dim 16 --sliding-window 5 \
  --query-pre-attn-scalar 24 --final-logit-softcapping 3
check_family phi3 --kv-heads 2 --architecture phi3 --sliding-window 7

[ "$FAILURES" -eq 0 ] || { echo "$FAILURES failures" >&2; exit 1; }
rm -rf "$WORK"
echo "PASS"
