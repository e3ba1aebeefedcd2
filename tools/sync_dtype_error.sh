#!/bin/bash
# What --sync-dtype costs in accuracy: `infer --tp 2*RANKS_PER_HOST` on two
# namespace "hosts" (tools/netns_hosts.sh, unshaped; RANKS_PER_HOST ranks
# each, default 1: with 2 the sums cross in two levels), since on one host
# the sums stay f32 whatever --sync-dtype says; greedy, once per sync type,
# every step's logits dumped; each type's logits against f32's, step by step
# up to the first step whose token differs (from there the runs continue
# from different text):
#   steps    steps compared (the generated tokens identical up to there) /
#            steps generated
#   max_abs  the largest |logit - f32 logit| over those steps
#   max_rel  the largest of each step's max |difference| / max |f32 logit|
#   gap      at the first differing step, the f32 logit gap between the two
#            tokens / max |f32 logit| (small: a near tie)
# A report, not a test: nothing is asserted.
#
#   tools/sync_dtype_error.sh BIN_DIR MODEL TOKENIZER STEPS PROMPT_IDS
#
# BIN_DIR holds launch, infer and frame_delay_relay (bazel-bin/tools);
# TOKENIZER "-": none. Needs root.
set -u
cd "$(dirname "$0")/.." || exit 1
source tools/netns_hosts.sh
BIN="$1" MODEL="$2" TOKENIZER="$3" STEPS="$4" PROMPT_IDS="$5"
RANKS_PER_HOST="${RANKS_PER_HOST:-1}"
WORK="$(mktemp -d /tmp/sync_dtype_error.XXXXXX)"
trap 'netns_hosts_down; rm -rf "$WORK"' EXIT
netns_hosts_up "$BIN/frame_delay_relay" 2 0 0 || { echo "sync_dtype_error: $NETNS_HOSTS_ERROR" >&2; exit 1; }
INFERNO_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export INFERNO_JOB_SECRET
PORT=$((20000 + RANDOM % 20000))  # free: nothing else runs in these namespaces
VOCAB=""
TOKENIZER_FLAG=()
[ "$TOKENIZER" = - ] || TOKENIZER_FLAG=(--tokenizer "$TOKENIZER")
for sync in f32 bf16 q8_0; do
  PORT=$((PORT + 1))
  pids=()
  for h in 0 1; do
    # Host 0's output (rank 0's ids and logits) is what is compared.
    ip netns exec "${NETNS_HOSTS_NS[$h]}" timeout 600 "$BIN/launch" -n "$RANKS_PER_HOST" --nnodes 2 --node-rank $h \
      --master-addr "${NETNS_HOSTS_ADDR[0]}" --master-port $PORT --timeout 580 --grace 2 -- "$BIN/infer" \
      --model "$MODEL" "${TOKENIZER_FLAG[@]}" --tp $((2 * RANKS_PER_HOST)) --threads 1 --prompt-ids "$PROMPT_IDS" \
      --max-new-tokens "$STEPS" --output ids --sync-dtype "$sync" --dump-logits "$WORK/$sync.logits" \
      >"$WORK/$sync.ids.$h" 2>"$WORK/$sync.err.$h" &
    pids+=($!)
  done
  for h in 0 1; do
    if ! wait "${pids[$h]}"; then
      echo "sync_dtype_error: infer --sync-dtype $sync failed on host $h: $(tail -1 "$WORK/$sync.err.$h")" >&2
      exit 1
    fi
  done
  mv "$WORK/$sync.ids.0" "$WORK/$sync.ids"
  cat "$WORK/$sync.err.0" "$WORK/$sync.err.1" >"$WORK/$sync.err"
  [ -n "$VOCAB" ] || VOCAB=$(grep -o 'classifier rows \[[0-9]*, [0-9]*)' "$WORK/$sync.err" | tr -dc '0-9 \n' |
    awk '{if ($2 > v) v = $2} END {print v}')
done
for sync in bf16 q8_0; do
  python3 - "$WORK/f32" "$WORK/$sync" "$VOCAB" "$sync" <<'PY'
import array, sys
reference, other, vocab, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def steps(path):
    values = array.array("f", open(path + ".logits", "rb").read())
    return [values[i:i + vocab] for i in range(0, len(values), vocab)]
a, b = steps(reference), steps(other)
ids_a = open(reference + ".ids").read().split()
ids_b = open(other + ".ids").read().split()
max_abs = max_rel = 0.0
compared, gap = 0, None
for step in range(min(len(a), len(b))):
    largest = max(abs(x) for x in a[step])
    worst = max(abs(x - y) for x, y in zip(a[step], b[step]))
    max_abs, max_rel = max(max_abs, worst), max(max_rel, worst / largest)
    compared += 1
    if step >= min(len(ids_a), len(ids_b)) or ids_a[step] != ids_b[step]:
        if step < min(len(ids_a), len(ids_b)):
            want, got = int(ids_a[step]), int(ids_b[step])
            gap = (a[step][want] - a[step][got]) / largest
        break
print("%s: steps %d/%d max_abs %.3g max_rel %.3g gap %s" %
      (name, compared, len(a), max_abs, max_rel, "none" if gap is None else "%.3g" % gap))
PY
done
