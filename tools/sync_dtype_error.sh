#!/bin/bash
# What --sync-dtype costs in accuracy: `infer --tp 2` on one host (launch
# -n 2), greedy, once per sync type, every step's logits dumped; each type's
# logits against f32's, step by step up to the first step whose token
# differs (from there the runs continue from different text):
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
# BIN_DIR holds launch and infer (bazel-bin/tools); TOKENIZER "-": none.
set -u
BIN="$1" MODEL="$2" TOKENIZER="$3" STEPS="$4" PROMPT_IDS="$5"
WORK="$(mktemp -d /tmp/sync_dtype_error.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
VOCAB=""
TOKENIZER_FLAG=()
[ "$TOKENIZER" = - ] || TOKENIZER_FLAG=(--tokenizer "$TOKENIZER")
for sync in f32 bf16 q8_0; do
  if ! timeout 600 "$BIN/launch" -n 2 --timeout 580 --grace 2 -- "$BIN/infer" --model "$MODEL" \
    "${TOKENIZER_FLAG[@]}" --tp 2 --threads 1 --prompt-ids "$PROMPT_IDS" --max-new-tokens "$STEPS" \
    --output ids --sync-dtype "$sync" --dump-logits "$WORK/$sync.logits" >"$WORK/$sync.ids" 2>"$WORK/$sync.err"; then
    echo "sync_dtype_error: infer --sync-dtype $sync failed: $(tail -1 "$WORK/$sync.err")" >&2
    exit 1
  fi
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
