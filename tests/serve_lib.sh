# Helpers for the serve sh_tests (source after test_lib.sh; set LAUNCH, SERVE
# and WORK first).

# start_server NAME LAUNCH_ARGS -- SERVE_ARGS...: starts `launch LAUNCH_ARGS --
# serve --listen 127.0.0.1:0 SERVE_ARGS` in the background and waits (60 s at
# most) until /health answers 200. Sets SERVER_PID (launch's pid), URL and
# SERVER_OUT; returns 1 (after a failed check) if the server never got ready.
start_server() {
  local name="$1"
  shift
  local launch_args=()
  while [ "$1" != "--" ]; do launch_args+=("$1"); shift; done
  shift
  SERVER_OUT="$WORK/$name.out"
  "$LAUNCH" "${launch_args[@]}" -- "$SERVE" --listen 127.0.0.1:0 "$@" >"$SERVER_OUT" 2>&1 &
  SERVER_PID=$!
  local deadline=$(($(now_ms) + 60000))
  URL=""
  while [ "$(now_ms)" -lt "$deadline" ] && kill -0 "$SERVER_PID" 2>/dev/null; do
    [ -z "$URL" ] && URL=$(sed -n 's/.*serve: listening on \(http:[^ ]*\)$/\1/p' "$SERVER_OUT" | head -1)
    if [ -n "$URL" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health")" = 200 ]; then
      return 0
    fi
    sleep 0.05
  done
  cat "$SERVER_OUT" >&2
  fail "$name: the server did not get ready within 60 s"
  kill -KILL "$SERVER_PID" 2>/dev/null
  return 1
}

# stop_server: SIGTERM to rank 0 (a drain), then waits (30 s at most) for
# launch; sets SERVER_STATUS to launch's exit status.
stop_server() {
  local rank0
  rank0=$(rank_pid "$SERVER_PID" 0)
  [ -n "$rank0" ] && kill -TERM "$rank0"
  wait_server 30
}

# wait_server SECONDS: waits for launch to exit, SIGKILLing it after SECONDS;
# sets SERVER_STATUS.
wait_server() {
  local deadline=$(($(now_ms) + $1 * 1000))
  while kill -0 "$SERVER_PID" 2>/dev/null && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.05; done
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    fail "the server job still runs $1 s later"
    kill -KILL "$SERVER_PID"
  fi
  wait "$SERVER_PID"
  SERVER_STATUS=$?
}

# expect_cancelled LIMIT: once streaming clients have left mid-stream, waits
# (10 s at most) until no request runs or waits; fails unless fewer than
# LIMIT tokens were generated in all (their sequences were cancelled, not run
# to their max_tokens) and a request after them is served.
expect_cancelled() {
  for _ in $(seq 200); do
    curl -s "$URL/metrics" | grep -qx 'inferno_running_requests 0' &&
      curl -s "$URL/metrics" | grep -qx 'inferno_queue_depth 0' && break
    sleep 0.05
  done
  local generated out
  generated=$(curl -s "$URL/metrics" | sed -n 's/^inferno_generated_tokens_total //p')
  [ -n "$generated" ] && [ "$generated" -lt "$1" ] ||
    fail "disconnected streams were not cancelled: $generated tokens generated ($1 if run to the end)"
  out=$(api /v1/completions -d '{"model": "toy", "prompt": "After", "max_tokens": 5}')
  [ "$(tail -1 <<<"$out")" = 200 ] || fail "a request after the disconnects: $out"
}

# api METHOD_PATH [BODY]: curl with the API key; prints the body, then the
# status on its own last line.
api() {
  local path="$1"
  shift
  curl -s --max-time 60 -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -w '\n%{http_code}' "$@" "$URL$path"
}

# json FIELD_EXPR: reads JSON on stdin, prints the Python expression FIELD_EXPR of it (as `j`).
json() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }

# require_openai_client: sets PACKAGE to the pinned `openai` npm package
# (tools/fetch_openai_client.sh caches it outside the tree), or skips the test
# when node or the package is absent.
require_openai_client() {
  local home
  home="$(getent passwd "$(id -u)" | cut -d: -f6)"
  PACKAGE="${INFERNO_CACHE:-$home/.cache/inferno}/openai-client/node_modules/openai"
  if ! command -v node >/dev/null || [ ! -f "$PACKAGE/package.json" ]; then
    skip "node or $PACKAGE not found (tools/fetch_openai_client.sh fetches it)"
  fi
}
