#!/bin/bash
# A lost leader in serve --failover (issue 32): 3 ranks under launch
# --failover, each process with its own serve --listen (a fixed port; the
# standby's too), and serve_front in front of them (--backend for each); 8
# greedy streams through the front end; rank 0 (the leader: HTTP listener,
# request queue, last stage) is lost once the streams have sent KILL_AFTER
# chunks between them, by each fault of FAULTS in turn (FAULT:STANDBYS;
# default "KILL:1 KILL:0 STOP:0 HANG:1"):
# - KILL: SIGKILL;
# - STOP: SIGSTOP (its listener still accepts connections, and it keeps its
#   port). Once the streams are done the test continues it (SIGCONT): it must
#   exit 1 within 10 s saying it was fenced out, not serve;
# - HANG: its generator thread hangs at forward pass HANG_STEP (the test-only
#   hook, runtime/test_only_hang.h, set for the first rank 0 alone); its other
#   threads run on, and it must end itself saying it was fenced out.
# The survivors name rank 0 lost from their liveness watch (the log line
# "(lost: 0) (the leader is lost)").
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
# GRID: serve's grid flags (e.g. "--tp 3"; none: three pipeline stages);
# the new leader must report generation 1's grid as GRID_AFTER without a
# standby and GRID_STANDBY with one (the job's own). TOY_FLAGS: the model's
# shape (make_toy_model's flags).
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
read -r -a FAULTS <<<"${FAULTS:-KILL:1 KILL:0 STOP:0 HANG:1}"
HANG_STEP=${HANG_STEP:-80}
export INFERNO_TIMEOUT_MS=5000
SHM_BEFORE="$(ls /dev/shm | sort)"
read -r -a TOY_FLAGS <<<"${TOY_FLAGS:---dim 128 --layers 6 --seq-len 512 --vocab 2000}"
TOKENIZER=${TOKENIZER:-byte-level}
read -r -a GRID <<<"${GRID:-}"
GRID_AFTER=${GRID_AFTER:-2 stages x 1 tensor-parallel}
GRID_STANDBY=${GRID_STANDBY:-3 stages x 1 tensor-parallel}
"$MAKE_TOY" --out "$WORK/toy" "${TOY_FLAGS[@]}" >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
printf '%s' '{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>' >"$WORK/chat.jinja"
# Each process's fixed port (ranks 0-2, then the standby): free a moment ago.
read -r -a PORTS <<<"$(python3 -c '
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')"
BACKEND="http://127.0.0.1:${PORTS[0]}"
BACKEND_FLAGS=() LISTEN_FLAGS=()
for port in "${PORTS[@]}"; do
  BACKEND_FLAGS+=(--backend "127.0.0.1:$port")
  LISTEN_FLAGS+=(--listen "127.0.0.1:$port")
done
# serve, but the first rank 0 alone hangs at forward pass HANG_STEP (a
# standby, with no RANK, and a rank that becomes rank 0 later never do).
cat >"$WORK/serve_hang0" <<EOF
#!/bin/bash
[ "\${RANK:-}" = 0 ] && export INFERNO_TEST_ONLY_HANG="0:$HANG_STEP"
exec "$(readlink -f "$SERVE")" "\$@"
EOF
chmod +x "$WORK/serve_hang0"

# Starts a serve_front for the processes' ports with failover timeout $1 ms,
# its output in $2; sets STARTED_PID and STARTED_URL, or exits failing.
start_front() {
  "$FRONT" --listen 127.0.0.1:0 "${BACKEND_FLAGS[@]}" --failover-timeout-ms "$1" >"$2" 2>&1 &
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

# run_job NAME STANDBYS [FAULT]: a 3-rank job (STANDBYS standby ranks), the
# streams through the front end (with FAULT: rank 0 lost mid-stream, see
# the top), then a drain through the leader of the moment; the client's JSON
# in $WORK/NAME.json. Sets NEW_LEADER (the pid drained).
run_job() {
  local name="$1" standbys="$2" fault="${3:-}" serve="$SERVE" signal=NONE
  [ "$fault" = HANG ] && serve="$WORK/serve_hang0"
  { [ "$fault" = KILL ] || [ "$fault" = STOP ]; } && signal=$fault
  SERVER_OUT="$WORK/$name.out"
  trap '' TERM
  "$LAUNCH" -n 3 --failover --standby "$standbys" --timeout 120 --grace 2 -- "$serve" --failover "${GRID[@]}" \
    "${LISTEN_FLAGS[@]:0:$((2 * (3 + standbys)))}" --model "$WORK/toy" --tokenizer "$TOKENIZER" --model-name toy \
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
  timeout 120 python3 "$CLIENT" "$URL" "$STREAMS" "$MAX_TOKENS" "${pids[0]}" "$KILL_AFTER" "$signal" \
    >"$WORK/$name.json"
  wait "$whole" || fail "$name: the whole answer's curl failed"
  curl -s --max-time 10 "$URL/metrics" >"$WORK/$name.metrics"
  if [ "$fault" = STOP ] || [ "$fault" = HANG ]; then
    # The lost leader, run again (STOP) or hung, ends itself, fenced out.
    [ "$fault" = STOP ] && kill -CONT "${pids[0]}"
    local gone=$(($(now_ms) + 10000))
    while kill -0 "${pids[0]}" 2>/dev/null && [ "$(now_ms)" -lt "$gone" ]; do sleep 0.05; done
    kill -0 "${pids[0]}" 2>/dev/null && fail "$name: the lost leader still runs 10 s after it was continued"
    grep -q "serve: rank 0: this rank was frozen or hung past the liveness limit.*fenced out" \
      "$SERVER_OUT" || fail "$name: the lost leader did not say it was fenced out"
    grep -q "launch: rank 0 (pid ${pids[0]}) exited with status 1.*carry on" "$SERVER_OUT" ||
      fail "$name: the lost leader did not exit 1: $(grep launch: "$SERVER_OUT")"
  fi
  # The leader now: rank 0, or after its loss the standby, or else rank 1.
  NEW_LEADER=${pids[0]}
  if [ -n "$fault" ]; then NEW_LEADER=${pids[$([ "$standbys" -gt 0 ] && echo 3 || echo 1)]}; fi
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

for fault_standbys in "${FAULTS[@]}"; do
  fault=${fault_standbys%:*} standbys=${fault_standbys#*:}
  name="leader-$fault-standby$standbys"
  run_job "$name" "$standbys" "$fault" || { cat "$SERVER_OUT" >&2; continue; }
  python3 - "$WORK/undisturbed.json" "$WORK/$name.json" "$name" <<'PY' || fail "$name: the streams across the failover"
import json, sys
before = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
assert r["killed"], "the client never marked the fault: the streams ended first"
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
  grid=$([ "$standbys" -gt 0 ] && echo "$GRID_STANDBY" || echo "$GRID_AFTER")
  grep -q "serve: rank 0: generation 1 formed over $ranks ranks ($grid ranks)" "$SERVER_OUT" ||
    fail "$name: generation 1 is not $grid: $(grep 'generation 1 formed' "$SERVER_OUT")"
  for line in 'inferno_failover_seconds_count 1' "inferno_ranks $ranks" "inferno_standby_takeovers_total $standbys"; do
    grep -qx "$line" "$WORK/$name.metrics" ||
      fail "$name: /metrics lacks '$line': $(grep -E 'failover_seconds_count|ranks|standby' "$WORK/$name.metrics")"
  done
  [ "$fault" != KILL ] || grep -q "launch: rank 0 (pid [0-9]*) was killed by signal 9.*carry on without it" "$SERVER_OUT" ||
    fail "$name: launch did not carry on without rank 0: $(grep launch: "$SERVER_OUT")"
  # Every survivor named rank 0 lost, from its liveness watch.
  [ "$(grep -c "serve: rank [12]: .*failing over (lost: 0) (the leader is lost)" "$SERVER_OUT")" = 2 ] ||
    fail "$name: the survivors did not both name rank 0 lost: $(grep "failing over" "$SERVER_OUT")"
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
