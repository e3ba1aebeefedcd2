#!/bin/bash
# A lost leader in serve --failover (issue 32): 3 ranks under launch
# --failover, serve --listen on a fixed port, and serve_front in front of
# it; 8 greedy streams through the front end; SIGKILL of rank 0 (the leader:
# HTTP listener, request queue, last stage) once the streams have sent
# KILL_AFTER chunks between them.
# - With a standby (launch --standby 1): the standby takes rank 0's place
#   (it becomes the leader and listens at the same address), the job keeps
#   3 ranks (/metrics: inferno_ranks 3, one takeover, one failover).
# - Without one (unless STANDBYS says otherwise): rank 1 becomes rank 0 of
#   a 2-rank job and loads the last stage (inferno_ranks 2).
# Either way every stream completes through serve_front with the text of an
# undisturbed run, no error event; the time from the kill to the next chunk
# is printed; a request answered whole, in flight at the kill, gets the
# undisturbed answer; SIGTERM to the new leader drains the job: launch exits 0, no
# process left (the standby included), nothing new in /dev/shm.
#
# First, on the undisturbed job's leader: serve_continuation_check.py (the
# leader's side of server/continuation.h, chat and completion streams).
#
# Usage: serve_leader_failover_test.sh LAUNCH SERVE MAKE_TOY_MODEL SERVE_FRONT CONTINUATION_CHECK_PY CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" FRONT="$4" CONTINUATION_CHECK="$5" CLIENT="$6"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_leader_failover.XXXXXX")"
STREAMS=8
MAX_TOKENS=${MAX_TOKENS:-120}
KILL_AFTER=${KILL_AFTER:-$((STREAMS * 20))}
read -r -a STANDBYS <<<"${STANDBYS:-1 0}"
export INFERNO_TIMEOUT_MS=5000
SHM_BEFORE="$(ls /dev/shm | sort)"
read -r -a TOY_FLAGS <<<"${TOY_FLAGS:---dim 128 --layers 6 --seq-len 512 --vocab 2000}"
TOKENIZER=${TOKENIZER:-byte-level}
"$MAKE_TOY" --out "$WORK/toy" "${TOY_FLAGS[@]}" >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
printf '%s' '{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>' >"$WORK/chat.jinja"
# The leader's fixed port: free a moment ago.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BACKEND="http://127.0.0.1:$PORT"

# Starts a serve_front for the leader's port with failover timeout $1 ms,
# its output in $2; sets STARTED_PID and STARTED_URL, or exits failing.
start_front() {
  "$FRONT" --listen 127.0.0.1:0 --backend "127.0.0.1:$PORT" --failover-timeout-ms "$1" >"$2" 2>&1 &
  STARTED_PID=$!
  STARTED_URL=
  for _ in $(seq 200); do
    STARTED_URL=$(sed -n 's/^serve_front: listening on \(http:[^ ]*\)$/\1/p' "$2")
    [ -n "$STARTED_URL" ] && return 0
    sleep 0.05
  done
  cat "$2" >&2
  kill -KILL "$STARTED_PID"
  echo "FAIL: serve_front did not listen" >&2
  exit 1
}
start_front 30000 "$WORK/front.out"
FRONT_PID=$STARTED_PID URL=$STARTED_URL

# run_job NAME STANDBYS [KILL]: a 3-rank job (STANDBYS standby ranks), the
# streams through the front end (with KILL: SIGKILL of rank 0 mid-stream),
# then a drain through the leader of the moment; the client's JSON in
# $WORK/NAME.json. Sets NEW_LEADER (the pid drained).
run_job() {
  local name="$1" standbys="$2" kill="${3:-}"
  SERVER_OUT="$WORK/$name.out"
  trap '' TERM
  "$LAUNCH" -n 3 --failover --standby "$standbys" --timeout 120 --grace 2 -- "$SERVE" --failover \
    --listen "127.0.0.1:$PORT" --model "$WORK/toy" --tokenizer "$TOKENIZER" --model-name toy \
    --chat-template "$WORK/chat.jinja" \
    --slots "$STREAMS" >"$SERVER_OUT" 2>&1 &
  SERVER_PID=$!
  trap - TERM
  local deadline=$(($(now_ms) + 60000))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health")" = 200 ]; do
    if [ "$(now_ms)" -ge "$deadline" ] || ! kill -0 "$SERVER_PID" 2>/dev/null; then
      fail "$name: the job did not get ready within 60 s"
      kill -KILL "$SERVER_PID"
      return 1
    fi
    sleep 0.05
  done
  if [ "$name" = undisturbed ]; then
    python3 "$CONTINUATION_CHECK" "$BACKEND" || fail "the leader's continuation of streams"
  fi
  local pids=() rank
  for rank in 0 1 2; do pids+=("$(rank_pid "$SERVER_PID" "$rank")"); done
  [ "$standbys" -gt 0 ] && pids+=("$(rank_pid "$SERVER_PID" 0 INFERNO_STANDBY)")
  # A request answered whole, running or queued (with the streams, one more
  # than the slots) when the leader is lost: the front end sends it again whole.
  curl -s --max-time 120 "$URL/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model": "toy", "prompt": "An answer sent whole", "max_tokens": 100, "temperature": 0}' \
    -w '\n%{http_code}' >"$WORK/$name.whole" &
  local whole=$!
  timeout 120 python3 "$CLIENT" "$URL" "$STREAMS" "$MAX_TOKENS" "${pids[0]}" "$KILL_AFTER" "${kill:-NONE}" \
    >"$WORK/$name.json"
  wait "$whole" || fail "$name: the whole answer's curl failed"
  curl -s --max-time 10 "$URL/metrics" >"$WORK/$name.metrics"
  # The leader now: rank 0, or after its loss the standby, or else rank 1.
  NEW_LEADER=${pids[0]}
  if [ -n "$kill" ]; then NEW_LEADER=${pids[$([ "$standbys" -gt 0 ] && echo 3 || echo 1)]}; fi
  kill -TERM "$NEW_LEADER"
  local until=$(($(now_ms) + 30000))
  while kill -0 "$SERVER_PID" 2>/dev/null && [ "$(now_ms)" -lt "$until" ]; do sleep 0.05; done
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    fail "$name: the job still runs 30 s after the drain"
    kill -KILL "$SERVER_PID"
  fi
  wait "$SERVER_PID"
  local status=$?
  [ "$status" -eq 0 ] || fail "$name: launch exited $status after the drain"
  for rank in "${!pids[@]}"; do
    if [ -n "${pids[$rank]}" ] && kill -0 "${pids[$rank]}" 2>/dev/null; then
      fail "$name: process $rank (pid ${pids[$rank]}; 3: the standby) left running"
      kill -KILL "${pids[$rank]}"
    fi
  done
}

run_job undisturbed 0 || { cat "$SERVER_OUT" >&2; kill -KILL "$FRONT_PID"; exit 1; }
sed -i "s/\"created\":[0-9]*,//; s/\"id\":\"cmpl-[0-9]*\",//" "$WORK/undisturbed.whole"
[ "$(tail -1 "$WORK/undisturbed.whole")" = 200 ] || fail "the undisturbed whole answer: $(cat "$WORK/undisturbed.whole")"
python3 - "$WORK/undisturbed.json" <<'PY' || fail "the undisturbed run"
import json, sys
r = json.load(open(sys.argv[1]))
for i, s in enumerate(r["streams"]):
    assert s["error"] is None and s["done"] and s["finish"] in ("length", "stop") and s["text"], (i, s)
PY

for standbys in "${STANDBYS[@]}"; do
  name="leader-standby$standbys"
  run_job "$name" "$standbys" KILL || { cat "$SERVER_OUT" >&2; continue; }
  python3 - "$WORK/undisturbed.json" "$WORK/$name.json" "$name" <<'PY' || fail "$name: the streams across the failover"
import json, sys
before = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
assert r["killed"], "the client never killed the leader: the streams ended first"
for i, (a, b) in enumerate(zip(before["streams"], r["streams"])):
    assert b["error"] is None, ("stream %d got an error" % i, b["error"])
    assert b["done"] and b["finish"] == a["finish"], (i, a["finish"], b)
    assert b["text"] == a["text"], ("stream %d differs from the undisturbed run" % i, a["text"], b["text"])
print("%s: 8/8 streams identical; kill to the next chunk %s ms, to every stream's next chunk %s ms; "
      "longest wait between chunks %s ms (undisturbed: %s ms)"
      % (sys.argv[3], r["kill_to_next_chunk_ms"], r["kill_to_every_next_chunk_ms"], r["longest_gap_ms"],
         before["longest_gap_ms"]))
PY
  [ "$(tail -1 "$WORK/$name.whole")" = 200 ] && cmp -s "$WORK/undisturbed.whole" <(
    sed "s/\"created\":[0-9]*,//; s/\"id\":\"cmpl-[0-9]*\",//" "$WORK/$name.whole") ||
    fail "$name: the whole answer differs: $(cat "$WORK/$name.whole") vs $(cat "$WORK/undisturbed.whole")"
  ranks=$((standbys > 0 ? 3 : 2))
  for line in 'inferno_failover_seconds_count 1' "inferno_ranks $ranks" "inferno_standby_takeovers_total $standbys"; do
    grep -qx "$line" "$WORK/$name.metrics" ||
      fail "$name: /metrics lacks '$line': $(grep -E 'failover_seconds_count|ranks|standby' "$WORK/$name.metrics")"
  done
  grep -q "launch: rank 0 (pid [0-9]*) was killed by signal 9.*carry on without it" "$SERVER_OUT" ||
    fail "$name: launch did not carry on without rank 0: $(grep launch: "$SERVER_OUT")"
  if [ "$standbys" -gt 0 ]; then
    grep -q "serve: standby rank 0 takes rank 0's place in generation 1" "$SERVER_OUT" ||
      fail "$name: the standby did not take rank 0's place: $(grep serve: "$SERVER_OUT")"
  else
    grep -q "serve: rank 1: the leader is lost; leading generation 1 over 2 ranks" "$SERVER_OUT" ||
      fail "$name: rank 1 did not take the lead: $(grep serve: "$SERVER_OUT")"
  fi
  grep "serve: rank 0: generation" "$SERVER_OUT"
done

# With no job behind it, requests through a front end get a clear error
# once its failover timeout has passed, not a hang: whole, and streamed.
start_front 500 "$WORK/front2.out"
FRONT2_PID=$STARTED_PID URL2=$STARTED_URL
out=$(curl -s --max-time 20 "$URL2/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model": "toy", "prompt": "x", "max_tokens": 2}' -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 503 ] && grep -q '"code":"leader_lost"' <<<"$out" || fail "a request with no leader: $out"
out=$(curl -s --max-time 20 "$URL2/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model": "toy", "prompt": "x", "max_tokens": 2, "stream": true}')
grep -q '^data: {"error":.*"code":"leader_lost"' <<<"$out" || fail "a stream with no leader: $out"
kill -TERM "$FRONT2_PID"
wait "$FRONT2_PID" || fail "the second serve_front exited $? on SIGTERM"
kill -TERM "$FRONT_PID"
wait "$FRONT_PID" || fail "serve_front exited $? on SIGTERM"

SHM_AFTER="$(ls /dev/shm | sort)"
LEFT_IN_SHM="$(comm -13 <(echo "$SHM_BEFORE") <(echo "$SHM_AFTER"))"
[ -z "$LEFT_IN_SHM" ] || fail "left in /dev/shm: $LEFT_IN_SHM"
[ "$FAILURES" -eq 0 ] || { cat "$SERVER_OUT" "$WORK/front.out" >&2; exit 1; }
rm -rf "$WORK"
echo "PASS"
