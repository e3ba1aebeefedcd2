#!/bin/bash
# `shard --ep` of a Qwen3-MoE GGUF file in Q8_0 (llama.cpp's stacked
# ffn_{gate,up,down}_exps tensors, 7 experts) for --ep 3 and --pp 2 --ep 2:
# - each rank's safetensors file holds, of every sparse layer of its stage,
#   exactly the three matrices of each expert of its manifest list for that
#   layer, whole, and no tensor of another expert; the lists tile the 7
#   experts, in contiguous runs unevenly (3, 2, 2 and 4, 3);
# - placed by load (--experts-by-load, from infer --routing-stats with
#   experts 0-2 made hot): the hot experts spread over each stage's ranks, so
#   the lists are not runs, and infer --shards again gives --model's tokens;
# - with copies (--expert-replicas R, in runs and by load): each rank's list
#   and file hold its own experts and R more, the lists cover the 7 experts,
#   and infer --shards again gives --model's tokens; ranks started with
#   different --expert-replicas are refused by the rendezvous (the plan);
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

# check_files DIR [by-load] [replicas=R]: checks that every rank's file
# holds its experts and only those (with R copies each: R beyond its own), and prints the expert counts of each rank of the first
# stage's first sparse layer and whether they are runs; fails with the
# reason on stderr.
check_files() {
  python3 - "$@" <<'EOF'
import json, re, struct, sys
folder = sys.argv[1]
by_load = "by-load" in sys.argv[2:]
replicas = [int(a.split("=")[1]) for a in sys.argv[2:] if a.startswith("replicas=")]
replicas = replicas[0] if replicas else 0
manifest = json.load(open(folder + "/manifest.json"))
assert manifest["world"]["expert_parallel"], "world.expert_parallel is not set"
config = manifest["config"]
step = config.get("decoder_sparse_step", 1)
owners = {}
for rank in manifest["ranks"]:
    with open(folder + "/" + rank["file"], "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    lists = rank["experts"]
    held = {}
    for name in header:
        m = re.match(r"model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(\w+)\.weight$", name)
        if m:
            held.setdefault(int(m.group(1)), set()).add((int(m.group(2)), m.group(3)))
    first, last = rank["layers"]
    sparse = [l for l in range(first, last) if (l + 1) % step == 0]
    assert len(lists) == last - first, "rank %d lists the experts of %d layers" % (rank["rank"], len(lists))
    assert sorted(held) == sparse, "rank %d holds experts of layers %s, its sparse layers are %s" % (
        rank["rank"], sorted(held), sparse)
    for layer in sparse:
        experts = lists[layer - first]
        expected = {(e, w) for e in experts for w in ("gate_proj", "up_proj", "down_proj")}
        assert held[layer] == expected, "rank %d layer %d holds %s, not experts %s" % (
            rank["rank"], layer, sorted(held[layer]), experts)
        if rank["stage"] == 0:
            owners.setdefault(layer, []).append(experts)
    for slice_ in rank["tensors"]:
        assert ".experts." not in slice_["name"] or "split_dim" not in slice_, slice_["name"] + " is cut"
for layer, lists in sorted(owners.items()):
    assert sorted(set(e for experts in lists for e in experts)) == list(range(config["num_experts"])), (
        "layer %d: the first stage's lists %s do not cover the experts" % (layer, lists))
    assert sum(len(experts) for experts in lists) == config["num_experts"] + replicas * len(lists), (
        "layer %d: the first stage's lists %s hold not %d copies each" % (layer, lists, replicas))
layer, lists = sorted(owners.items())[0]
runs = all(experts == list(range(experts[0], experts[-1] + 1)) for lists in owners.values() for experts in lists)
print(" ".join(map(str, (len(experts) for experts in lists))) + (" runs" if runs else " placed"))
if by_load and replicas == 0:  # the hot experts 0-2 spread as evenly as they can be
    for layer, lists in owners.items():
        most = max(sum(1 for e in experts if e < 3) for experts in lists)
        assert most == -(-3 // len(lists)), "layer %d: hot experts bunched: %s" % (layer, lists)
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
  counts=$(check_files "$WORK/$name" ${BY_LOAD:+by-load} ${REPLICAS:+replicas=$REPLICAS} 2>"$WORK/$name.check") || { fail "$name: $(tail -1 "$WORK/$name.check")"; return; }
  echo "$name: experts per rank of the first stage: $counts"
  echo "$counts" >"$WORK/$name.counts"
  infer_ids "$name" "$world" --shards "$WORK/$name" "${PROMPT[@]}" --max-new-tokens "$TOKENS" || return
  cmp -s "$WORK/$name.model.ids" "$WORK/$name.ids" ||
    fail "$name: tokens $(cat "$WORK/$name.ids") differ from --model's $(cat "$WORK/$name.model.ids")"
}

shard_and_run ep3 3 --pp 1 --ep 3
shard_and_run pp2ep2 4 --pp 2 --ep 2
grep -q " ep=" "$WORK/ep3.log" || fail "ep3: shard's summary does not name the layout: $(cat "$WORK/ep3.log")"
[ "$(cat "$WORK/ep3.counts" 2>/dev/null)" = "3 2 2 runs" ] || fail "ep3: experts per rank are not runs of 3 2 2"
[ "$(cat "$WORK/pp2ep2.counts" 2>/dev/null)" = "4 3 runs" ] || fail "pp2ep2: experts per rank are not runs of 4 3"

# Placed by load: the routing one rank measured, experts 0-2 made hot.
"$INFER" --model "$MODEL" "${PROMPT[@]}" --max-new-tokens "$TOKENS" --output ids --routing-stats "$WORK/stats.json" \
  >/dev/null 2>"$WORK/stats.err" || fail "infer --routing-stats: $(tail -1 "$WORK/stats.err")"
python3 - "$WORK/stats.json" "$WORK/hot.json" <<'EOF' || fail "routing stats: $(cat "$WORK/stats.json")"
import json, sys
stats = json.load(open(sys.argv[1]))
assert stats["num_experts"] == 7 and len(stats["counts"]) == 4, stats
stats["counts"] = [[c + 1000 if e < 3 else c for e, c in enumerate(counts)] for counts in stats["counts"]]
json.dump(stats, open(sys.argv[2], "w"))
EOF
BY_LOAD=1 shard_and_run ep3_by_load 3 --pp 1 --ep 3 --experts-by-load "$WORK/hot.json"
BY_LOAD=1 shard_and_run pp2ep2_by_load 4 --pp 2 --ep 2 --experts-by-load "$WORK/hot.json"
grep -q "the busiest rank gets" "$WORK/ep3_by_load.log" || fail "ep3_by_load: no busiest-rank share: $(cat "$WORK/ep3_by_load.log")"
grep -q " placed$" "$WORK/ep3_by_load.counts" 2>/dev/null || fail "ep3_by_load: experts placed in runs"
# With copies: 4 + 1 and 3 + 1 experts; by load, 2 copies each on 3 ranks.
REPLICAS=1 shard_and_run ep2_replicas 2 --pp 1 --ep 2 --expert-replicas 1
[ "$(cat "$WORK/ep2_replicas.counts" 2>/dev/null)" = "5 4 placed" ] || fail "ep2_replicas: not 5 and 4 experts"
BY_LOAD=1 REPLICAS=2 shard_and_run ep3_by_load_replicas 3 --pp 1 --ep 3 --experts-by-load "$WORK/hot.json" \
  --expert-replicas 2

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
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["counts"][1] = s["counts"][1][:5]; json.dump(s, open(sys.argv[2], "w"))' \
  "$WORK/stats.json" "$WORK/short.json"
expect_error other_model "shard: InvalidArgument: --experts-by-load: $WORK/short.json: layer 1 counts 5 experts but the model has 7" \
  "$SHARD" --model "$MODEL" --pp 1 --ep 3 --experts-by-load "$WORK/short.json" --out "$WORK/bad"
expect_error by_load_tp "shard: InvalidArgument: --experts-by-load places experts under expert parallelism; add --ep" \
  "$SHARD" --model "$MODEL" --pp 1 --tp 2 --experts-by-load "$WORK/stats.json" --out "$WORK/bad"
expect_error replicas_too_many \
  "shard: InvalidArgument: --expert-replicas 4 exceeds the 3 experts of layer 0 that rank index 0 does not own" \
  "$SHARD" --model "$MODEL" --pp 1 --ep 2 --expert-replicas 4 --out "$WORK/bad"
expect_error replicas_tp "shard: InvalidArgument: --expert-replicas copies experts under expert parallelism; add --ep" \
  "$SHARD" --model "$MODEL" --pp 1 --tp 2 --expert-replicas 1 --out "$WORK/bad"
[ ! -e "$WORK/bad/manifest.json" ] || fail "a manifest written after a refused split"
timeout 120 "$LAUNCH" -n 3 --timeout 60 --grace 2 -- "$INFER" --shards "$WORK/ep3" --tp 3 "${PROMPT[@]}" \
  >/dev/null 2>"$WORK/tp_over_ep.err" && fail "--tp 3 over --ep 3 shards accepted"
grep -q "these shards were made for pp=1 ep=3 (3 ranks); this job asks for pp=1 tp=3" "$WORK/tp_over_ep.err" ||
  fail "--tp over ep shards: $(cat "$WORK/tp_over_ep.err")"
timeout 120 "$LAUNCH" -n 2 --timeout 60 --grace 2 -- "$INFER" --shards "$WORK/ep2_replicas" --ep 2 \
  --expert-replicas 1 "${PROMPT[@]}" >/dev/null 2>"$WORK/replicas_shards.err" && fail "--expert-replicas with --shards accepted"
grep -q "expert-replicas cannot be combined with --shards: the shards fix the placement" "$WORK/replicas_shards.err" ||
  fail "--expert-replicas with --shards: $(cat "$WORK/replicas_shards.err")"
# Rank 1 with copies, rank 0 without: refused before any token.
timeout 120 "$LAUNCH" -n 2 --timeout 60 --grace 2 -- /bin/sh -c \
  'if [ "$RANK" = 1 ]; then exec "$@" --expert-replicas 1; fi; exec "$@"' sh \
  "$INFER" --model "$MODEL" --ep 2 "${PROMPT[@]}" >/dev/null 2>"$WORK/replicas_differ.err" &&
  fail "ranks with different --expert-replicas accepted"
grep -q "rank 1 and rank 0 run different things: plan is" "$WORK/replicas_differ.err" ||
  fail "different --expert-replicas: $(cat "$WORK/replicas_differ.err")"

[ "$FAILURES" -eq 0 ] || exit 1
rm -rf "$WORK"
echo "PASS"
