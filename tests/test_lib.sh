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

# skip REASON...: ends the test, passing as far as Bazel 4 can tell (it has
# no skip status), with the line "SKIP: REASON" in its log: .ci/run counts a
# test whose log holds such a line as skipped, not passed. A test that skips
# only part of its checks prints that line and goes on.
skip() {
  echo "SKIP: $*"
  exit 0
}

# now_ms: the wall clock in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# shared_model FILE: sets MODEL to FILE in ../shared/models beside the
# project's checkout (or $INFERNO_SHARED_MODELS); when it is absent, the test
# skips.
shared_model() {
  local checkout
  checkout="$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")"
  MODEL="${INFERNO_SHARED_MODELS:-$checkout/shared/models}/$1"
  if [ ! -f "$MODEL" ]; then
    skip "$MODEL not found (../shared/models is absent in a fresh clone)"
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
