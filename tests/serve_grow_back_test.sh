#!/bin/bash
# serve --failover grows back: a job of 3 ranks (three pipeline stages, no
# standby) with 8 greedy streams in flight loses rank 2 (SIGKILL) and carries
# on over 2; a replacement with another job secret (launch --join) is refused
# with a one-line error and nothing joins; then a replacement with the job's
# secret (launch --join ADDR:PORT, the job's MASTER_ADDR:MASTER_PORT) joins,
# and the job regroups at a step boundary to its own 3 ranks, the running
# streams requeued as after a failover:
# - every stream completes with the text of an undisturbed run of the same
#   job, no error event, and at least one stream ran across the grow-back;
# - /metrics: inferno_ranks 3, inferno_joins_total 1, one failover;
# - SIGTERM drains the job, the replacement included: both launches exit 0,
#   no process left running, nothing new in /dev/shm.
# Prints the time from the replacement's start to the 3-rank generation
# formed, and the decode rate before the kill and after the grow-back.
#
# Usage: serve_grow_back_test.sh LAUNCH SERVE MAKE_TOY_MODEL CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" CLIENT="$4"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_grow_back.XXXXXX")"
STREAMS=8
# Long enough that the streams outlast the loss, the refused stranger and
# the replacement's join (together 2-4 s here): at 400 tokens a CI run on
# 6 December saw every stream end before the grow-back.
MAX_TOKENS=${MAX_TOKENS:-1000}
KILL_AFTER=${KILL_AFTER:-$((STREAMS * 20))}
export INFERNO_TIMEOUT_MS=5000
SHM_BEFORE="$(ls /dev/shm | sort)"
read -r -a TOY_FLAGS <<<"${TOY_FLAGS:---dim 128 --layers 6 --seq-len 1280 --vocab 2000}"
TOKENIZER=${TOKENIZER:-byte-level}
"$MAKE_TOY" --out "$WORK/toy" "${TOY_FLAGS[@]}" >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
SERVE_ARGS=(--failover --model "$WORK/toy" --tokenizer "$TOKENIZER" --model-name toy --slots "$STREAMS")
secret() { python3 -c 'import secrets; print(secrets.token_hex(32))'; }
export INFERNO_JOB_SECRET="$(secret)"  # launch gives it to the job's ranks
PIDS=()

# wait_for_line FILE PATTERN SECONDS: whether FILE gets a line matching PATTERN in time.
wait_for_line() {
  local deadline=$(($(now_ms) + $3 * 1000))
  while [ "$(now_ms)" -lt "$deadline" ]; do
    grep -q "$2" "$1" && return 0
    sleep 0.05
  done
  return 1
}

# run_job NAME [GROW]: the 3-rank job and the 8 streams; with GROW, rank 2 is
# SIGKILLed once KILL_AFTER chunks have arrived, then the replacements join.
run_job() {
  local name="$1" grow="${2:-}" rank signal=NONE
  [ -n "$grow" ] && signal=KILL
  trap '' TERM
  start_server "$name" -n 3 --failover --timeout 150 --grace 2 -- "${SERVE_ARGS[@]}" || { trap - TERM; return 1; }
  trap - TERM
  JOB_PIDS=()
  for rank in 0 1 2; do JOB_PIDS+=("$(rank_pid "$SERVER_PID" "$rank")"); done
  PIDS+=("${JOB_PIDS[@]}")
  local victim="${JOB_PIDS[2]}"
  timeout 120 python3 "$CLIENT" "$URL" "$STREAMS" "$MAX_TOKENS" "$victim" "$KILL_AFTER" "$signal" \
    >"$WORK/$name.json" &
  local client=$!
  [ -n "$grow" ] && join_replacements "$name"
  wait "$client" || fail "$name: the client failed"
  curl -s --max-time 10 "$URL/metrics" >"$WORK/$name.metrics"
  stop_server
  [ "$SERVER_STATUS" -eq 0 ] || fail "$name: launch exited $SERVER_STATUS after the drain"
}

# join_replacements NAME: once the job runs on 2 ranks, a replacement with
# another secret (refused), then one with the job's, which it takes in.
join_replacements() {
  local name="$1" port out="$WORK/$1.out"
  wait_for_line "$out" "serve: rank 0: generation 1 formed over 2 ranks" 60 ||
    { fail "$name: no 2-rank generation after the kill"; return 1; }
  port=$(tr '\0' '\n' <"/proc/${JOB_PIDS[0]}/environ" | sed -n 's/^MASTER_PORT=//p')
  INFERNO_JOB_SECRET="$(secret)" timeout 60 "$LAUNCH" --join "127.0.0.1:$port" -- "$SERVE" \
    --listen 127.0.0.1:0 "${SERVE_ARGS[@]}" >"$WORK/stranger.out" 2>&1
  local status=$?
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "$name: a replacement of another secret: status $status"
  grep -q "serve: standby rank [0-9]*: .*refuse" "$WORK/stranger.out" ||
    fail "$name: the stranger's error: $(cat "$WORK/stranger.out")"
  grep -q "generation 2" "$out" && fail "$name: a replacement of another secret joined"
  JOIN_STARTED=$(now_ms)
  "$LAUNCH" --join "127.0.0.1:$port" --standby-index 0 --timeout 150 -- "$SERVE" --listen 127.0.0.1:0 \
    "${SERVE_ARGS[@]}" >"$WORK/replacement.out" 2>&1 &
  JOIN_PID=$!
  if wait_for_line "$out" "serve: rank 0: generation 2 formed over 3 ranks (3 stages" 60; then
    echo "$name: from the replacement's start to the 3-rank generation: $(($(now_ms) - JOIN_STARTED)) ms"
  else
    fail "$name: the job did not grow back to 3 ranks: $(grep 'serve: rank 0' "$out")"
  fi
  PIDS+=("$(rank_pid "$JOIN_PID" 0 INFERNO_STANDBY)")
}

run_job undisturbed || { cat "$SERVER_OUT" >&2; exit 1; }
JOIN_PID=""
run_job grow yes || { cat "$SERVER_OUT" >&2; exit 1; }
if [ -n "$JOIN_PID" ]; then
  deadline=$(($(now_ms) + 30000))
  while kill -0 "$JOIN_PID" 2>/dev/null && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.05; done
  kill -0 "$JOIN_PID" 2>/dev/null && { fail "the replacement's launch still runs after the drain"; kill -KILL "$JOIN_PID"; }
  wait "$JOIN_PID" || fail "the replacement's launch exited $? after the drain: $(cat "$WORK/replacement.out")"
fi
for pid in "${PIDS[@]}"; do
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    fail "process $pid left running"
    kill -KILL "$pid"
  fi
done
python3 - "$WORK/undisturbed.json" "$WORK/grow.json" <<'PY' || fail "the streams across the loss and the grow-back"
import json, sys
before, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert r["killed"], "the client never signalled the victim: the streams ended first"
for i, (a, b) in enumerate(zip(before["streams"], r["streams"])):
    assert a["error"] is None and b["error"] is None, (i, a["error"], b["error"])
    assert b["done"] and b["finish"] == a["finish"], (i, a["finish"], b)
    assert b["text"] == a["text"], ("stream %d differs from the undisturbed run" % i, a["text"], b["text"])
print("grow: 8/8 streams identical; kill to every stream's next chunk %s ms; chunks/s before the kill %s, "
      "undisturbed over the same window %s" % (r["kill_to_every_next_chunk_ms"], r["chunks_per_s_before_kill"],
                                                before["chunks_per_s_before_kill"]))
PY
for line in 'inferno_ranks 3' 'inferno_joins_total 1' 'inferno_failover_seconds_count 1'; do
  grep -qx "$line" "$WORK/grow.metrics" ||
    fail "/metrics lacks '$line': $(grep -E 'ranks|joins|failover_seconds_count' "$WORK/grow.metrics")"
done
grep -Eq "serve: rank 0: generation 2: 3 ranks \(1 replacement\(s\) joined\); [1-9][0-9]* running requests continue" \
  "$WORK/grow.out" || fail "no stream ran across the grow-back: $(grep 'generation 2' "$WORK/grow.out")"
grep "serve: rank 0: generation\|a replacement called" "$WORK/grow.out"
SHM_AFTER="$(ls /dev/shm | sort)"
LEFT_IN_SHM="$(comm -13 <(echo "$SHM_BEFORE") <(echo "$SHM_AFTER"))"
[ -z "$LEFT_IN_SHM" ] || fail "left in /dev/shm: $LEFT_IN_SHM"
if [ "$FAILURES" -ne 0 ]; then
  cat "$WORK/grow.out" "$WORK/replacement.out" >&2
  exit 1
fi
rm -rf "$WORK"
echo PASS
