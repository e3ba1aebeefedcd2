#!/bin/bash
# //tools:infer on ../shared/models/stories260K.bin, 1 and 3 ranks, against an
# independent plain-Python forward pass of the llama2.c file
# (llama2c_reference.py): the same greedy token ids, and logits within 1e-4.
# Skips (passing, with a message) when ../shared/models is absent.
# Usage: infer_vs_reference_test.sh LAUNCH INFER REFERENCE_PY COMPARE_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" REFERENCE="$3" COMPARE="$4"
shared_model stories260K.bin
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_vs_reference.XXXXXX")"
STEPS=12
PROMPT="1 461 401"

python3 "$REFERENCE" "$MODEL" "$STEPS" $PROMPT >"$WORK/reference.txt" || { echo "FAIL: reference failed" >&2; exit 1; }
for world in 1 3; do
  if ! timeout 120 "$LAUNCH" -n "$world" --timeout 90 --grace 2 -- "$INFER" --model "$MODEL" --prompt-ids "$PROMPT" \
      --max-new-tokens "$STEPS" --output ids --dump-logits "$WORK/logits.$world" >"$WORK/ids.$world" 2>"$WORK/err.$world"; then
    cat "$WORK/err.$world" >&2
    fail "infer on $world ranks failed"
    continue
  fi
  python3 "$COMPARE" "$WORK/reference.txt" "$WORK/ids.$world" "$WORK/logits.$world" "$world ranks" ||
    fail "$world ranks: logits or ids differ from the reference"
done
[ "$FAILURES" -eq 0 ] || { echo "$FAILURES failures" >&2; exit 1; }
rm -rf "$WORK"
echo "PASS"
