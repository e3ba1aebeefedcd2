#!/bin/bash
# A rank of a 2-rank //tools:serve job (two pipeline stages, or one stage of
# two tensor-parallel ranks) is lost (SIGKILL or SIGSTOP), while a stream is
# in flight or while the server is idle:
# - a stream in flight ends with an error event (a rank other than the
#   leader lost), never hangs;
# - every surviving rank exits on its own, non-zero, within
#   INFERNO_TIMEOUT_MS + 2 s of the fault, with a "serve: rank R:" line naming
#   a PeerLost or Timeout; launch exits non-zero;
# - a client polling /health sees it answer 503 "unhealthy" between the
#   fault and the exit (a rank other than the leader lost), then the
#   connection refused.
# An idle server outlives the transport's timeout (its ticks keep the ring
# alive) and still answers. The survivors inherit SIGTERM as ignored, so
# launch's SIGTERM cannot end them: they must notice the loss themselves.
#
# Usage: serve_fault_test.sh LAUNCH SERVE MAKE_TOY_MODEL CLIENT_PY
set -u
source tests/test_lib.sh
LAUNCH="$1" SERVE="$2" MAKE_TOY="$3" CLIENT="$4"
source tests/serve_lib.sh
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/serve_fault.XXXXXX")"
KEY=""
TIMEOUT_MS=2000
SLACK_MS=2000
"$MAKE_TOY" --out "$WORK/toy" --dim 256 --layers 4 --seq-len 1024 --vocab 4000 >/dev/null ||
  { echo "FAIL: make_toy_model" >&2; exit 1; }

# run_case NAME SIGNAL VICTIM BUSY [SERVE_FLAGS...]
run_case() {
  local name="$1" signal="$2" victim="$3" busy="$4"
  shift 4
  local grace=$(((TIMEOUT_MS + SLACK_MS) / 1000 + 1))
  export INFERNO_TIMEOUT_MS=$TIMEOUT_MS
  trap '' TERM
  start_server "$name" -n 2 --timeout 120 --grace "$grace" -- --model "$WORK/toy" --tokenizer byte-level \
    --model-name toy "$@" || { trap - TERM; return; }
  trap - TERM
  declare -A pid_of=([0]=$(rank_pid "$SERVER_PID" 0) [1]=$(rank_pid "$SERVER_PID" 1))
  local client_pid=""
  if [ "$busy" = busy ]; then
    python3 "$CLIENT" request "$URL" "" /v1/completions \
      '{"model": "toy", "prompt": "Long", "max_tokens": 1000, "temperature": 0.8, "seed": 9, "stream": true}' \
      >"$WORK/$name.stream" 2>&1 &
    client_pid=$!
    # Until tokens flow: the generated-token counter moves.
    for _ in $(seq 400); do
      [ "$(curl -s "$URL/metrics" | sed -n 's/^inferno_generated_tokens_total //p')" -gt 0 ] 2>/dev/null && break
      sleep 0.05
    done
  else
    # Idle for longer than the transport's timeout: the server still answers.
    sleep $((TIMEOUT_MS * 3 / 2000 + 1))
    local out
    out=$(curl -s --max-time 30 -w '\n%{http_code}' "$URL/v1/completions" -d '{"model": "toy", "prompt": "x", "max_tokens": 3}')
    [ "$(tail -1 <<<"$out")" = 200 ] || fail "$name: a request after idling past the timeout: $out"
  fi
  local bound=$((TIMEOUT_MS + SLACK_MS)) survivor=$((1 - victim)) gone_after=""
  python3 "$CLIENT" health "$URL" $(((bound + 3000) / 1000)) >"$WORK/$name.health" &
  local watcher_pid=$!
  # Until the watcher has its first answer (the server is up: 200).
  for _ in $(seq 400); do [ -s "$WORK/$name.health" ] && break; sleep 0.05; done
  local fault_at
  fault_at=$(now_ms)
  kill "-$signal" "${pid_of[$victim]}"
  while [ "$(now_ms)" -lt $((fault_at + bound + 1000)) ]; do
    if ! kill -0 "${pid_of[$survivor]}" 2>/dev/null; then
      gone_after=$(($(now_ms) - fault_at))
      break
    fi
    sleep 0.02
  done
  wait_server 15
  [ "$SERVER_STATUS" -ne 0 ] || fail "$name: launch exited 0"
  if [ -z "$gone_after" ]; then
    fail "$name: rank $survivor still running $((bound + 1000)) ms after the fault"
  elif [ "$gone_after" -gt "$bound" ]; then
    fail "$name: rank $survivor exited $gone_after ms after the fault (limit $bound ms)"
  fi
  wait "$watcher_pid"
  local seen
  seen=$(paste -sd ' ' "$WORK/$name.health")
  [ "$(head -1 "$WORK/$name.health")" = '[200, "ok"]' ] || fail "$name: /health before the fault: $seen"
  [ "$(tail -1 "$WORK/$name.health")" = '"refused"' ] || fail "$name: /health still answered after the job ended: $seen"
  if [ "$victim" -ne 0 ] && ! grep -qxF '[503, "unhealthy"]' "$WORK/$name.health"; then
    fail "$name: /health never answered 503 unhealthy between the fault and the exit: $seen"
  fi
  grep -Eq "serve: rank $survivor: (PeerLost|Timeout): .*rank $victim" "$SERVER_OUT" ||
    fail "$name: rank $survivor does not name the lost rank $victim: $(grep 'serve: rank' "$SERVER_OUT")"
  if [ -n "$client_pid" ]; then
    wait "$client_pid"
    if [ "$victim" -ne 0 ]; then
      python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
assert r['error'] and r['error']['type'] == 'server_error' and not r['done'], r" "$WORK/$name.stream" ||
        fail "$name: the stream in flight did not end with an error event: $(cat "$WORK/$name.stream")"
    fi
  fi
  for rank in 0 1; do
    if kill -0 "${pid_of[$rank]}" 2>/dev/null; then
      fail "$name: rank $rank left behind"
      kill -KILL "${pid_of[$rank]}"
    fi
  done
  echo "$name: rank $survivor exited after ${gone_after:-?} ms; /health answered $seen"
  [ "$FAILURES" -eq 0 ] || cat "$SERVER_OUT" >&2
}

run_case kill-first-stage-busy KILL 1 busy
run_case stop-first-stage-busy STOP 1 busy
run_case kill-leader-busy KILL 0 busy
run_case kill-first-stage-idle KILL 1 idle
# --tp 2: rank 1 is the leader's tensor-parallel peer in the one stage.
run_case kill-tensor-parallel-peer-busy KILL 1 busy --tp 2

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
