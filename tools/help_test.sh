#!/bin/bash
# Every binary answers --help with its usage on stdout and exit 0, and an
# unknown flag with one line on stderr naming it and a non-zero exit; and
# every cc_binary that tools/BUILD and tools/yardsticks/BUILD declare is one
# of the BINARYs (the README's "each answers --help" holds for every tool).
# Usage: help_test.sh BINARY...
set -u
source tests/test_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/help.XXXXXX")"

given=" $(for binary in "$@"; do basename "$binary"; done | tr '\n' ' ')"
declared=0
for build in tools/BUILD tools/yardsticks/BUILD; do
  [ -f "$build" ] || fail "$build is not in the runfiles"
  for name in $(sed -n '/^cc_binary(/,/name = /s/.*name = "\([^"]*\)".*/\1/p' "$build"); do
    declared=$((declared + 1))
    [[ "$given" == *" $name "* ]] || fail "$build declares cc_binary $name, which help_test does not run"
  done
done
[ "$declared" -gt 0 ] || fail "no cc_binary found in tools/BUILD and tools/yardsticks/BUILD"

for binary in "$@"; do
  name="$(basename "$binary")"
  "$binary" --help >"$WORK/$name.out" 2>"$WORK/$name.err"
  status=$?
  [ "$status" -eq 0 ] || fail "$name --help exited $status: $(cat "$WORK/$name.err")"
  head -1 "$WORK/$name.out" | grep -q "^usage: $name " || fail "$name --help printed no usage line: $(head -3 "$WORK/$name.out")"
  grep -q -- "--help" "$WORK/$name.out" || fail "$name --help does not list --help"
  [ ! -s "$WORK/$name.err" ] || fail "$name --help wrote to stderr: $(cat "$WORK/$name.err")"

  RANK=0 WORLD_SIZE=1 "$binary" --no-such-flag 1 >/dev/null 2>"$WORK/$name.bad"
  status=$?
  [ "$status" -ne 0 ] || fail "$name accepted --no-such-flag"
  [ "$(wc -l <"$WORK/$name.bad")" -eq 1 ] || fail "$name: not one error line: $(cat "$WORK/$name.bad")"
  grep -q "unknown flag --no-such-flag" "$WORK/$name.bad" || fail "$name: error does not name the flag: $(cat "$WORK/$name.bad")"
done

if [ "$FAILURES" -ne 0 ]; then
  echo "$FAILURES failures" >&2
  exit 1
fi
echo "PASS: $# binaries answer --help and reject an unknown flag"
