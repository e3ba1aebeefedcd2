#!/bin/bash
# //tools:infer on synthetic checkpoints of each Llama-family layout, on 1
# rank, 2 pipeline stages and 2 tensor-parallel ranks (the mixtures of
# experts with EP=1 also on 2 and 3 expert-parallel ranks, uneven expert
# counts included, and on 2 stages x 2 expert-parallel ranks; and placed by
# load: the 1-rank run's --routing-stats, with experts 0 and 1 made hot, read
# by --experts-by-load on 2 ranks and 2 x 2 ranks, which must place experts
# in other than contiguous runs; and with copies, --expert-replicas 1 on 2
# and 3 ranks and by load on 2, where a token's expert held twice must run
# on one holder only), against an independent
# plain-Python forward pass of the Hugging Face layout (hf_reference.py): the
# same greedy ids, logits within 1e-4. Families: Llama 3.1 style (GQA,
# rope_scaling llama3, tied embeddings), Qwen2 (q/k/v biases, head_dim !=
# hidden / heads), Qwen3 (q and k norms, head_dim != hidden / heads), Llama
# with attention_bias and linear RoPE scaling, Mistral, Phi-3 with longrope
# (within its original context, and past it: the long factors); the mixtures of experts Mixtral and
# Qwen3-MoE (top-k routing; Qwen3-MoE also without renormalisation and with
# dense layers from decoder_sparse_step and mlp_only_layers: only layer 1 of
# 4 sparse) over 200+ positions (STEPS set per family; with GGUF=1, the
# family also as a GGUF file, make_toy_model --format gguf, f32, on 1 rank
# and --tp 2, with EP=1 also --ep 3); and over 320 positions Qwen3, windowed Mistral, Gemma 3 and
# Phi-3. Prompt plus generation run past the scaled RoPE's original context,
# so scaling matters.
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
  local grids=("1" "2 --pp 2" "2 --tp 2")
  [ "${EP:-0}" = 1 ] && grids+=("2 --ep 2" "3 --ep 3" "4 --pp 2 --ep 2" "2 --ep 2 --experts-by-load SKEW"
    "4 --pp 2 --ep 2 --experts-by-load SKEW" "2 --ep 2 --expert-replicas 1" "3 --ep 3 --expert-replicas 1"
    "2 --ep 2 --experts-by-load SKEW --expert-replicas 1")
  if [ "${GGUF:-0}" = 1 ]; then
    if ! "$MAKE_TOY" --format gguf --out "$WORK/$name.gguf" --dim 32 --layers 3 --heads 4 --seq-len "$SEQ_LEN" "$@" \
        >/dev/null; then
      echo "FAIL: $name: make_toy_model --format gguf $*" >&2
      FAILURES=$((FAILURES + 1))
    fi
    grids+=("1 gguf" "2 --tp 2 gguf")
    [ "${EP:-0}" = 1 ] && grids+=("3 --ep 3 gguf")
  fi
  for grid in "${grids[@]}"; do
    local model="$WORK/$name"
    [ "${grid% gguf}" != "$grid" ] && model="$WORK/$name.gguf" && grid="${grid% gguf}"
    local world="${grid%% *}" flags="" run="${grid// /}${model##*$name}"
    [ "$world" != "$grid" ] && flags="${grid#* }"
    flags="${flags/SKEW/$WORK/$name.skew}"
    [ "$grid" = 1 ] && [ "${EP:-0}" = 1 ] && flags="--routing-stats $WORK/$name.stats"
    # shellcheck disable=SC2086  # flags is a list of flags
    if ! timeout 120 "$LAUNCH" -n "$world" --timeout 90 --grace 2 -- "$INFER" --model "$model" $flags \
        --prompt-ids "$PROMPT" --max-new-tokens "$STEPS" --output ids --dump-logits "$WORK/$name.logits.$run" \
        >"$WORK/$name.ids.$run" 2>"$WORK/$name.err.$run"; then
      cat "$WORK/$name.err.$run" >&2
      echo "FAIL: $name: infer on $world ranks ($flags) failed" >&2
      FAILURES=$((FAILURES + 1))
      continue
    fi
    python3 "$COMPARE" "$WORK/$name.reference" "$WORK/$name.ids.$run" "$WORK/$name.logits.$run" \
      "$name${model##*$name} on $world ranks $flags" || FAILURES=$((FAILURES + 1))
    if [ "${flags#--routing-stats}" != "$flags" ]; then
      # shellcheck disable=SC2086  # the prompt is a list of ids
      skew_stats "$WORK/$name.stats" "$WORK/$name.skew" "$(($(echo $PROMPT | wc -w) + STEPS - 1))" ||
        { echo "FAIL: $name: --routing-stats" >&2; FAILURES=$((FAILURES + 1)); }
    elif [ "${flags#*--experts-by-load}" != "$flags" ] && [ "${flags#*--expert-replicas}" = "$flags" ] &&
      ! grep -q "experts placed per layer" "$WORK/$name.err.$run"; then
      echo "FAIL: $name on $world ranks $flags: experts not placed by load: $(grep '^rank' "$WORK/$name.err.$run")" >&2
      FAILURES=$((FAILURES + 1))
    fi
  done
}

# skew_stats STATS OUT POSITIONS: checks infer's routing stats (every sparse
# layer routed the same positions, at most POSITIONS, to num_experts_per_tok
# experts each; a dense layer nothing) and writes them to OUT with experts 0 and 1 made ten
# times as hot: contiguous runs would put both on one rank.
skew_stats() {
  python3 - "$@" <<'EOF'
import json, sys
stats = json.load(open(sys.argv[1]))
positions = int(sys.argv[3])
assert stats["format"] == "inferno-routing-stats", stats
k = stats["num_experts_per_tok"]
sums = set()
for layer, counts in enumerate(stats["counts"]):
    if counts:
        assert len(counts) == stats["num_experts"], (layer, counts)
        sums.add(sum(counts))
assert len(sums) == 1, "the sparse layers routed %s positions x experts" % sums
routed = sums.pop()
assert routed % k == 0 and 0 < routed <= positions * k, "%d routed, %d positions of %d experts" % (routed, positions, k)
stats["counts"] = [[c * 10 + 100 if e < 2 else c for e, c in enumerate(counts)] for counts in stats["counts"]]
json.dump(stats, open(sys.argv[2], "w"))
EOF
}

check_family llama3 --kv-heads 2 --rope-scaling llama3
check_family qwen2 --kv-heads 2 --architecture qwen2 --head-dim 12
check_family llama_bias --kv-heads 4 --attention-bias --rope-scaling linear --rope-factor 2
check_family mistral --kv-heads 1 --architecture mistral
check_family phi3_longrope --kv-heads 2 --architecture phi3 --rope-scaling longrope --rope-factor 3
# Past the original context (half of the 64 positions): the long factors. A
# 40-token prompt, so that Hugging Face's choice per forward call is the long
# factors throughout too.
STEPS=20 PROMPT="$(seq -s ' ' 3 42)" GGUF=1 check_family phi3_longrope_long --kv-heads 2 --architecture phi3 \
  --rope-scaling longrope --rope-factor 3
# GGUF has no query_pre_attn_scalar (llama.cpp derives it): this one is
# checked from the folder only.
check_family gemma3_scalar --kv-heads 2 --architecture gemma3 --head-dim 16 --sliding-window 5 \
  --query-pre-attn-scalar 24

EP=1 GGUF=1 STEPS=200 check_family mixtral --seq-len 256 --layers 2 --kv-heads 2 --architecture mixtral --experts 4 \
  --experts-per-token 2 --hidden 32
EP=1 GGUF=1 STEPS=200 check_family qwen3_moe --seq-len 256 --kv-heads 2 --architecture qwen3_moe --head-dim 16 \
  --hidden 48 --experts 7 --experts-per-token 2 --expert-hidden 16 --norm-topk-prob
EP=1 check_family qwen3_moe_dense_layers --layers 4 --kv-heads 2 --architecture qwen3_moe --experts 3 \
  --experts-per-token 2 --expert-hidden 24 --decoder-sparse-step 2 --mlp-only-layers 3

# Qwen3 and the sliding families over 320 positions: a 100-token prompt (two prefill
# chunks) and 220 generated tokens, so a window of 5-7 positions wraps its
# layers' caches (window + 63 positions) several times, in prefill and decode.
STEPS=220
PROMPT="$(seq -s ' ' 3 102)"
SEQ_LEN=320
GGUF=1 check_family qwen3 --kv-heads 2 --architecture qwen3 --head-dim 16
check_family mistral_window --kv-heads 1 --architecture mistral --sliding-window 6
GGUF=1 check_family gemma3 --kv-heads 2 --architecture gemma3 --head-dim 16 --sliding-window 5 \
  --final-logit-softcapping 3
GGUF=1 check_family phi3 --kv-heads 2 --architecture phi3 --sliding-window 7

[ "$FAILURES" -eq 0 ] || { echo "$FAILURES failures" >&2; exit 1; }
rm -rf "$WORK"
echo "PASS"
