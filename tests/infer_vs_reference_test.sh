#!/bin/bash
# //tools:infer on ../shared/models/stories260K.bin, 1 and 3 ranks, against an
# independent plain-Python forward pass of the llama2.c file
# (llama2c_reference.py): the same greedy token ids, and logits within 1e-4.
# Skips (passing, with a message) when ../shared/models is absent.
# Usage: infer_vs_reference_test.sh LAUNCH INFER REFERENCE_PY
set -u
LAUNCH="$1" INFER="$2" REFERENCE="$3"
SOURCE="$(readlink -f "$0")"
MODEL="${INFERNO_SHARED_MODELS:-$(dirname "$(dirname "$(dirname "$SOURCE")")")/shared/models}/stories260K.bin"
if [ ! -f "$MODEL" ]; then
  echo "SKIP: $MODEL not found (../shared/models is absent in a fresh clone)"
  exit 0
fi
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_vs_reference.XXXXXX")"
STEPS=12
PROMPT="1 461 401"

python3 "$REFERENCE" "$MODEL" "$STEPS" $PROMPT >"$WORK/reference.txt" || { echo "FAIL: reference failed" >&2; exit 1; }
FAILURES=0
for world in 1 3; do
  if ! timeout 120 "$LAUNCH" -n "$world" --timeout 90 --grace 2 -- "$INFER" --model "$MODEL" --prompt-ids "$PROMPT" \
      --max-new-tokens "$STEPS" --output ids --dump-logits "$WORK/logits.$world" >"$WORK/ids.$world" 2>"$WORK/err.$world"; then
    cat "$WORK/err.$world" >&2
    echo "FAIL: infer on $world ranks failed" >&2
    FAILURES=$((FAILURES + 1))
    continue
  fi
  python3 - "$WORK/reference.txt" "$WORK/ids.$world" "$WORK/logits.$world" "$world" <<'PY' || FAILURES=$((FAILURES + 1))
import struct, sys
reference = [line.split() for line in open(sys.argv[1])]
expected_ids = [int(fields[1]) for fields in reference]
ids = [int(t) for t in open(sys.argv[2]).read().split()]
raw = open(sys.argv[3], "rb").read()
logits = struct.unpack("%df" % (len(raw) // 4), raw)
vocab = len(reference[0]) - 2
if ids != expected_ids:
    sys.exit("FAIL: %s ranks: ids %s, reference %s" % (sys.argv[4], ids, expected_ids))
if len(logits) != vocab * len(reference):
    sys.exit("FAIL: %s ranks: %d logits, expected %d" % (sys.argv[4], len(logits), vocab * len(reference)))
worst = 0.0
for step, fields in enumerate(reference):
    for i, text in enumerate(fields[2:]):
        worst = max(worst, abs(logits[step * vocab + i] - float(text)))
if worst > 1e-4:
    sys.exit("FAIL: %s ranks: logits differ from the reference by up to %g" % (sys.argv[4], worst))
print("%s ranks: %d tokens match the reference, logits within %.2g" % (sys.argv[4], len(ids), worst))
PY
done
[ "$FAILURES" -eq 0 ] || { echo "$FAILURES failures" >&2; exit 1; }
rm -rf "$WORK"
echo "PASS"
