#!/bin/bash
# serve --failover on 3 ranks (three pipeline stages) under launch
# --failover, 8 greedy streams in flight: SIGKILL of a non-leader rank
# (rank 1 or 2, chosen at random unless VICTIM is set) once the streams have
# sent KILL_AFTER chunks between them; then the same with SIGSTOP (the
# frozen rank is SIGKILLed by launch --grace after rank 0's drain, or with
# STOPPED=continue, continued by the test once the streams are done: it must
# then exit 1 within 10 s saying it was fenced out; unless SIGNALS says
# otherwise). The survivors regroup as 2 ranks (two
# pipeline stages over the same model file) and the leader continues every
# stream from its prompt and the tokens already sent:
# - every stream completes with the text of an undisturbed run of the same
#   job, no error event;
# - /metrics counts one failover;
# - the time from the kill to the next chunk (of any stream, and of every
#   stream) is printed;
# - SIGTERM then drains the 2-rank job: launch exits 0, no rank left
#   running, nothing new left in /dev/shm.
# Then the same SIGKILL in a job with a standby rank (launch --standby 1):
# the standby takes the victim's place, so the job keeps 3 ranks and its
# plan (/metrics: inferno_ranks 3, one standby takeover), every stream is
# identical, and the drain ends every process, the standby included.
# The survivors inherit SIGTERM as ignored, so launch's SIGTERM cannot end
# them: the drain must.
# RANKS: the job's ranks (default 3; the victim is one of 1 to RANKS - 1).
# GRID: serve's grid flags (e.g. "--tp 3"; none: RANKS pipeline stages).
# rank 0 must report generation 1's grid as GRID_AFTER without the standby
# and GRID_STANDBY with it (the job's own). SAME_WITHOUT_STANDBY=0: the
# re-plan without a standby changes the tensor-parallel degree, so the
# all-reduce sums in another order and greedy text is not guaranteed: each
# stream must still complete without an error, its text before the kill
# equal to the undisturbed run's; how many are identical is reported.
#
# Usage: serve_failover_test.sh LAUNCH SERVE MAKE_TOY_MODEL CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" CLIENT="$4"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_failover.XXXXXX")"
STREAMS=8
MAX_TOKENS=${MAX_TOKENS:-120}
KILL_AFTER=${KILL_AFTER:-$((STREAMS * 20))}
RANKS=${RANKS:-3}
VICTIM=${VICTIM:-$((1 + RANDOM % (RANKS - 1)))}
read -r -a SIGNALS <<<"${SIGNALS:-KILL STOP}"
# STANDBY_SIGNALS: the runs with a standby rank (none: "").
read -r -a STANDBY_SIGNALS <<<"${STANDBY_SIGNALS-KILL}"
STOPPED=${STOPPED:-kill}
export INFERNO_TIMEOUT_MS=5000
SHM_BEFORE="$(ls /dev/shm | sort)"
# TOY_FLAGS: the model's shape (make_toy_model's flags); TOKENIZER: serve's.
# tools/serve_failover_soak.sh sets them for the stories15M shape.
read -r -a TOY_FLAGS <<<"${TOY_FLAGS:---dim 128 --layers 6 --seq-len 512 --vocab 2000}"
TOKENIZER=${TOKENIZER:-byte-level}
read -r -a GRID <<<"${GRID:-}"
GRID_AFTER=${GRID_AFTER:-2 stages x 1 tensor-parallel}
GRID_STANDBY=${GRID_STANDBY:-3 stages x 1 tensor-parallel}
SAME_WITHOUT_STANDBY=${SAME_WITHOUT_STANDBY:-1}
"$MAKE_TOY" --out "$WORK/toy" "${TOY_FLAGS[@]}" >/dev/null ||
  { echo "FAIL: make_toy_model" >&2; exit 1; }

# run_job NAME [SIGNAL [STANDBYS]]: a RANKS-rank job (with STANDBYS standby
# ranks), the 8 streams (with SIGNAL: SIGNAL to rank VICTIM mid-stream), then
# a drain; the client's JSON in $WORK/NAME.json.
run_job() {
  local name="$1" signal="${2:-}" standbys="${3:-0}"
  trap '' TERM
  start_server "$name" -n "$RANKS" --failover --standby "$standbys" --timeout 120 --grace 2 -- --failover \
    "${GRID[@]}" --model "$WORK/toy" --tokenizer "$TOKENIZER" --model-name toy --slots "$STREAMS" || { trap - TERM; return 1; }
  trap - TERM
  local pids=() rank standby
  for ((rank = 0; rank < RANKS; ++rank)); do pids+=("$(rank_pid "$SERVER_PID" "$rank")"); done
  for ((standby = 0; standby < standbys; ++standby)); do
    pids+=("$(rank_pid "$SERVER_PID" "$standby" INFERNO_STANDBY)")
  done
  # The undisturbed run marks the same moment (NONE), for the rates' windows.
  timeout 90 python3 "$CLIENT" "$URL" "$STREAMS" "$MAX_TOKENS" "${pids[$VICTIM]}" "$KILL_AFTER" "${signal:-NONE}" \
    >"$WORK/$name.json"
  curl -s --max-time 10 "$URL/metrics" >"$WORK/$name.metrics"
  if [ "$signal" = STOP ] && [ "$STOPPED" = continue ]; then
    local victim="${pids[$VICTIM]}" gone=$(($(now_ms) + 10000))
    kill -CONT "$victim"
    while kill -0 "$victim" 2>/dev/null && [ "$(now_ms)" -lt "$gone" ]; do sleep 0.05; done
    kill -0 "$victim" 2>/dev/null && fail "$name: the stopped rank $VICTIM still runs 10 s after it was continued"
    grep -q "serve: rank $VICTIM: this rank was frozen or hung past the liveness limit.*fenced out" "$SERVER_OUT" ||
      fail "$name: the stopped rank $VICTIM did not say it was fenced out: $(grep "serve: rank $VICTIM" "$SERVER_OUT")"
  fi
  stop_server
  [ "$SERVER_STATUS" -eq 0 ] || fail "$name: launch exited $SERVER_STATUS after the drain"
  for rank in "${!pids[@]}"; do
    if [ -n "${pids[$rank]}" ] && kill -0 "${pids[$rank]}" 2>/dev/null; then
      fail "$name: process $rank (pid ${pids[$rank]}; $RANKS and up: standby ranks) left running"
      kill -KILL "${pids[$rank]}"
    fi
  done
}

# same_streams NAME [SAME]: NAME's streams are the undisturbed run's (SAME=0:
# they complete, the text before the kill the same); prints the times and rates.
same_streams() {
  python3 - "$WORK/undisturbed.json" "$WORK/$1.json" "$1" "${2:-1}" <<'PY' || fail "$1: the streams across the failover"
import json, sys
before = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
same = sys.argv[4] == "1"
assert r["killed"], "the client never signalled the victim: the streams ended first"
identical = 0
for i, (a, b) in enumerate(zip(before["streams"], r["streams"])):
    assert b["error"] is None, ("stream %d got an error" % i, b["error"])
    assert b["done"] and b["finish"] in ("length", "stop"), (i, b)
    assert a["text"].startswith(b["text_before_kill"]), ("stream %d differs before the kill" % i, a["text"], b)
    identical += b["text"] == a["text"] and b["finish"] == a["finish"]
    if same:
        assert b["finish"] == a["finish"], (i, a["finish"], b)
        assert b["text"] == a["text"], ("stream %d differs from the undisturbed run" % i, a["text"], b["text"])
print("%s: %d/8 streams identical; kill to the next chunk %s ms, to every stream's next chunk %s ms; "
      "longest wait between chunks %s ms (undisturbed: %s ms); chunks/s before the kill %s, after %s"
      % (sys.argv[3], identical, r["kill_to_next_chunk_ms"], r["kill_to_every_next_chunk_ms"], r["longest_gap_ms"],
         before["longest_gap_ms"], r["chunks_per_s_before_kill"], r["chunks_per_s_after"]))
PY
}

run_job undisturbed || { cat "$SERVER_OUT" >&2; exit 1; }
python3 - "$WORK/undisturbed.json" "$MAX_TOKENS" <<'PY' || fail "the undisturbed run"
import json, sys
r = json.load(open(sys.argv[1]))
for i, s in enumerate(r["streams"]):
    assert s["error"] is None and s["done"] and s["finish"] in ("length", "stop") and s["text"], (i, s)
print("undisturbed: chunks/s before the mark %s, after %s" % (r["chunks_per_s_before_kill"], r["chunks_per_s_after"]))
PY

for signal in "${SIGNALS[@]}"; do
  name="failover-$signal"
  run_job "$name" "$signal" || { cat "$SERVER_OUT" >&2; exit 1; }
  same_streams "$name" "$SAME_WITHOUT_STANDBY"
  grep -q "serve: rank 0: generation 1 formed over $((RANKS - 1)) ranks ($GRID_AFTER ranks)" "$SERVER_OUT" ||
    fail "$name: generation 1 is not $GRID_AFTER: $(grep 'generation 1 formed' "$SERVER_OUT")"
  grep -qx 'inferno_failover_seconds_count 1' "$WORK/$name.metrics" ||
    fail "$name: /metrics does not count one failover: $(grep failover "$WORK/$name.metrics")"
  grep -qx "inferno_ranks $((RANKS - 1))" "$WORK/$name.metrics" || fail "$name: /metrics: $(grep ranks "$WORK/$name.metrics")"
  grep -E '^inferno_failover_seconds_(sum|count)' "$WORK/$name.metrics"
  if [ "$signal" = KILL ]; then
    grep -q "launch: rank $VICTIM (pid [0-9]*) was killed by signal 9.*carry on without it" "$SERVER_OUT" ||
      fail "$name: launch did not report rank $VICTIM's loss and carry on: $(grep launch: "$SERVER_OUT")"
  elif [ "$STOPPED" = continue ]; then
    grep -q "launch: rank $VICTIM (pid [0-9]*) exited with status 1.*carry on" "$SERVER_OUT" ||
      fail "$name: the continued rank $VICTIM did not exit 1: $(grep launch: "$SERVER_OUT")"
  else
    grep -Eq "launch: rank [0-9] exited with status 0; --failover: stopping [0-9]+ ranks still running" "$SERVER_OUT" ||
      fail "$name: launch did not stop the frozen rank $VICTIM: $(grep launch: "$SERVER_OUT")"
  fi
  grep "serve: rank 0: generation" "$SERVER_OUT"
done

for signal in "${STANDBY_SIGNALS[@]}"; do
  name="standby-$signal"
  run_job "$name" "$signal" 1 || { cat "$SERVER_OUT" >&2; exit 1; }
  same_streams "$name"
  grep -q "serve: rank 0: generation 1 formed over $RANKS ranks ($GRID_STANDBY ranks)" "$SERVER_OUT" ||
    fail "$name: generation 1 is not $GRID_STANDBY: $(grep 'generation 1 formed' "$SERVER_OUT")"
  for line in 'inferno_failover_seconds_count 1' "inferno_ranks $RANKS" 'inferno_standby_takeovers_total 1'; do
    grep -qx "$line" "$WORK/$name.metrics" ||
      fail "$name: /metrics lacks '$line': $(grep -E 'failover_seconds_count|ranks|standby' "$WORK/$name.metrics")"
  done
  grep -q "serve: standby rank 0 takes rank $VICTIM's place in generation 1" "$SERVER_OUT" ||
    fail "$name: the standby did not take rank $VICTIM's place: $(grep serve: "$SERVER_OUT")"
  grep "serve: rank 0: generation" "$SERVER_OUT"
done

SHM_AFTER="$(ls /dev/shm | sort)"
LEFT_IN_SHM="$(comm -13 <(echo "$SHM_BEFORE") <(echo "$SHM_AFTER"))"
[ -z "$LEFT_IN_SHM" ] || fail "left in /dev/shm: $LEFT_IN_SHM"
[ "$FAILURES" -eq 0 ] || { cat "$SERVER_OUT" >&2; exit 1; }
rm -rf "$WORK"
echo "PASS: victim rank $VICTIM"
