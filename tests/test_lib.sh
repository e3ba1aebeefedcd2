# Helpers shared by the multi-process sh_tests. Source it first, from the
# runfiles root (a test's working directory): `source tests/test_lib.sh`.
# A script calls `fail` for every failed check and ends with
# `[ "$FAILURES" -eq 0 ] || exit 1`.

FAILURES=0

# fail MESSAGE...: reports a failed check and counts it; the test goes on.
fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}

# now_ms: the wall clock in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# shared_model FILE: sets MODEL to FILE in ../shared/models beside the
# project's checkout (or $INFERNO_SHARED_MODELS); when it is absent, prints
# SKIP and ends the test, passing.
shared_model() {
  local checkout
  checkout="$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")"
  MODEL="${INFERNO_SHARED_MODELS:-$checkout/shared/models}/$1"
  if [ ! -f "$MODEL" ]; then
    echo "SKIP: $MODEL not found (../shared/models is absent in a fresh clone)"
    exit 0
  fi
}

# infer_ids NAME WORLD ARGS...: runs $INFER on WORLD ranks under $LAUNCH with
# --output ids and ARGS (and --model $MODEL unless ARGS hold --shards);
# leaves $WORK/NAME.ids and $WORK/NAME.err. On failure prints the error
# output, counts a failed check and returns 1.
infer_ids() {
  local name="$1" world="$2"
  shift 2
  local source=(--model "$MODEL")
  [[ " $* " == *" --shards "* ]] && source=()
  if ! timeout 300 "$LAUNCH" -n "$world" --timeout 240 --grace 2 -- \
      "$INFER" "${source[@]}" --output ids "$@" >"$WORK/$name.ids" 2>"$WORK/$name.err"; then
    cat "$WORK/$name.err" >&2
    fail "$name: infer on $world ranks failed"
    return 1
  fi
}
