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
