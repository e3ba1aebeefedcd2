#!/bin/bash
# //tools:infer on ../shared/models/stories260K.bin, 1 and 3 ranks, against an
# independent plain-Python forward pass of the llama2.c file
# (llama2c_reference.py): the same greedy token ids, and logits within 1e-4.
# Skips (passing, with a message) when ../shared/models is absent.
# Usage: infer_vs_reference_test.sh LAUNCH INFER REFERENCE_PY COMPARE_PY
set -u
LAUNCH="$1" INFER="$2" REFERENCE="$3" COMPARE="$4"
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
  python3 "$COMPARE" "$WORK/reference.txt" "$WORK/ids.$world" "$WORK/logits.$world" "$world ranks" ||
    FAILURES=$((FAILURES + 1))
done
[ "$FAILURES" -eq 0 ] || { echo "$FAILURES failures" >&2; exit 1; }
rm -rf "$WORK"
echo "PASS"
