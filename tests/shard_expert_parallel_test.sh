#!/bin/bash
# `shard --ep` of a Qwen3-MoE GGUF file in Q8_0 (llama.cpp's stacked
# ffn_{gate,up,down}_exps tensors, 7 experts) for --ep 3 and --pp 2 --ep 2:
# - each rank's safetensors file holds, of every sparse layer of its stage,
#   exactly the three matrices of each expert of its manifest range, whole,
#   and no tensor of another expert; the ranges tile the 7 experts unevenly
#   (3, 2, 2 and 4, 3);
# - infer --shards on those ranks gives the tokens of infer --model with the
#   same flags (a Q8_0 model's tokens may part from one rank's at a near tie,
#   as under --tp; infer_vs_hf_reference_test checks EP's logits);
# - impossible splits fail with one line: more expert-parallel ranks than
#   experts, --ep on a dense model, --tp with --ep, and --tp over shards made
#   for --ep.
# Usage: shard_expert_parallel_test.sh LAUNCH INFER MAKE_TOY_MODEL SHARD
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" SHARD="$4"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/shard_ep.XXXXXX")"
TOKENS=40
PROMPT=(--prompt-ids "1 72 101 108 108 111")

MODEL="$WORK/moe.gguf"
"$MAKE_TOY" --format gguf --dtype q8_0 --out "$MODEL" --dim 64 --heads 8 --kv-heads 2 --layers 4 \
  --architecture qwen3_moe --experts 7 --experts-per-token 2 --expert-hidden 32 --norm-topk-prob \
  >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }

# check_files DIR: checks that every rank's file holds its experts and only
# those, and prints the experts of each rank of the first stage; fails with
# the reason on stderr.
check_files() {
  python3 - "$1" <<'EOF'
import json, re, struct, sys
folder = sys.argv[1]
manifest = json.load(open(folder + "/manifest.json"))
assert manifest["world"]["expert_parallel"], "world.expert_parallel is not set"
config = manifest["config"]
step = config.get("decoder_sparse_step", 1)
covered = []
for rank in manifest["ranks"]:
    with open(folder + "/" + rank["file"], "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    begin, end = rank["experts"]
    held = {}
    for name in header:
        m = re.match(r"model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(\w+)\.weight$", name)
        if m:
            held.setdefault(int(m.group(1)), set()).add((int(m.group(2)), m.group(3)))
    first, last = rank["layers"]
    sparse = [l for l in range(first, last) if (l + 1) % step == 0]
    expected = {(e, w) for e in range(begin, end) for w in ("gate_proj", "up_proj", "down_proj")}
    assert sorted(held) == sparse, "rank %d holds experts of layers %s, its sparse layers are %s" % (
        rank["rank"], sorted(held), sparse)
    for layer in sparse:
        assert held[layer] == expected, "rank %d layer %d holds %s, not experts [%d, %d)" % (
            rank["rank"], layer, sorted(held[layer]), begin, end)
    for slice_ in rank["tensors"]:
        assert ".experts." not in slice_["name"] or "split_dim" not in slice_, slice_["name"] + " is cut"
    if rank["stage"] == 0:
        covered.append(end - begin)
print(" ".join(map(str, covered)))
EOF
}

# shard_and_run NAME WORLD GRID_FLAGS...: the shards, their files, and their
# tokens against --model's.
shard_and_run() {
  local name="$1" world="$2"
  shift 2
  infer_ids "$name.model" "$world" "${PROMPT[@]}" --max-new-tokens "$TOKENS" "$@" || return
  if ! "$SHARD" --model "$MODEL" "$@" --out "$WORK/$name" 2>"$WORK/$name.log"; then
    fail "$name: shard $*: $(tail -1 "$WORK/$name.log")"
    return
  fi
  local counts
  counts=$(check_files "$WORK/$name" 2>"$WORK/$name.check") || { fail "$name: $(tail -1 "$WORK/$name.check")"; return; }
  echo "$name: experts per rank of the first stage: $counts"
  echo "$counts" >"$WORK/$name.counts"
  infer_ids "$name" "$world" --shards "$WORK/$name" "${PROMPT[@]}" --max-new-tokens "$TOKENS" || return
  cmp -s "$WORK/$name.model.ids" "$WORK/$name.ids" ||
    fail "$name: tokens $(cat "$WORK/$name.ids") differ from --model's $(cat "$WORK/$name.model.ids")"
}

shard_and_run ep3 3 --pp 1 --ep 3
shard_and_run pp2ep2 4 --pp 2 --ep 2
grep -q " ep=" "$WORK/ep3.log" || fail "ep3: shard's summary does not name the layout: $(cat "$WORK/ep3.log")"
[ "$(cat "$WORK/ep3.counts" 2>/dev/null)" = "3 2 2" ] || fail "ep3: experts per rank are not 3 2 2"
[ "$(cat "$WORK/pp2ep2.counts" 2>/dev/null)" = "4 3" ] || fail "pp2ep2: experts per rank are not 4 3"

# expect_error NAME MESSAGE COMMAND...: fails with exactly one line, MESSAGE.
expect_error() {
  local name="$1" message="$2"
  shift 2
  if "$@" >/dev/null 2>"$WORK/$name.err"; then
    fail "$name: accepted"
  elif [ "$(cat "$WORK/$name.err")" != "$message" ]; then
    fail "$name: '$(cat "$WORK/$name.err")', expected '$message'"
  fi
}
expect_error too_many "shard: InvalidArgument: --ep 8 exceeds the 7 experts of the model" \
  "$SHARD" --model "$MODEL" --pp 1 --ep 8 --out "$WORK/bad"
"$MAKE_TOY" --out "$WORK/dense" >/dev/null || fail "make_toy_model dense"
expect_error dense "shard: InvalidArgument: --ep 2 needs a mixture of experts; the model is dense (use --tp)" \
  "$SHARD" --model "$WORK/dense" --pp 1 --ep 2 --out "$WORK/bad"
expect_error both "shard: InvalidArgument: --tp and --ep both given: --ep M splits attention over its M ranks as --tp M does; give one" \
  "$SHARD" --model "$MODEL" --pp 1 --tp 2 --ep 2 --out "$WORK/bad"
[ ! -e "$WORK/bad/manifest.json" ] || fail "a manifest written after a refused split"
timeout 120 "$LAUNCH" -n 3 --timeout 60 --grace 2 -- "$INFER" --shards "$WORK/ep3" --tp 3 "${PROMPT[@]}" \
  >/dev/null 2>"$WORK/tp_over_ep.err" && fail "--tp 3 over --ep 3 shards accepted"
grep -q "these shards were made for pp=1 ep=3 (3 ranks); this job asks for pp=1 tp=3" "$WORK/tp_over_ep.err" ||
  fail "--tp over ep shards: $(cat "$WORK/tp_over_ep.err")"

[ "$FAILURES" -eq 0 ] || exit 1
rm -rf "$WORK"
echo "PASS"
