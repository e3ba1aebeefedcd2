#!/bin/bash
# Behaviour of //tools:launch with small shell programs as ranks: environment,
# exit statuses, output tagging, stopping the job, and no process left behind.
# Usage: launch_test.sh PATH_TO_LAUNCH
set -u
source tests/test_lib.sh

LAUNCH="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/launch_test.XXXXXX")"

# Writes a rank program to $WORK/NAME from stdin and prints its path.
program() {
  cat > "$WORK/$1"
  chmod +x "$WORK/$1"
  echo "$WORK/$1"
}

# Every pid listed in the files given is gone (waits up to 2 s for reaping).
expect_all_gone() {
  local what="$1"
  shift
  local pid
  for pid in $(cat "$@" 2>/dev/null); do
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      fail "$what: process $pid is still running"
      kill -KILL "$pid" 2>/dev/null
    fi
  done
}

# Waits (up to 10 s) until COUNT files match the glob.
wait_for_files() {
  local count="$1" glob="$2"
  for _ in $(seq 100); do
    # shellcheck disable=SC2086
    [ "$(ls $glob 2>/dev/null | wc -l)" -ge "$count" ] && return 0
    sleep 0.1
  done
  return 1
}

# --- environment ------------------------------------------------------------
ENV_DUMP=$(program env_dump.sh <<EOS
#!/bin/sh
echo "\$RANK \$WORLD_SIZE \$LOCAL_RANK \$LOCAL_WORLD_SIZE \$MASTER_ADDR \$MASTER_PORT \${OMPI_COMM_WORLD_RANK:-unset}" > "$WORK/env.\$RANK"
EOS
)
OMPI_COMM_WORLD_RANK=7 timeout 20 "$LAUNCH" -n 4 -- "$ENV_DUMP"
status=$?
[ "$status" -eq 0 ] || fail "env: launch exited $status, want 0"
ports=$(cat "$WORK"/env.* | awk '{print $6}' | sort -u)
[ "$(echo "$ports" | wc -l)" -eq 1 ] || fail "env: ranks got different ports: $ports"
[ "$ports" -gt 0 ] 2>/dev/null || fail "env: MASTER_PORT '$ports' is not a port"
for r in 0 1 2 3; do
  read -r rank world local local_world addr port ompi < "$WORK/env.$r" || true
  [ "$rank $world $local $local_world $addr $ompi" = "$r 4 $r 4 127.0.0.1 unset" ] ||
    fail "env: rank $r saw '$(cat "$WORK/env.$r")'"
done

# --- one node of a multi-node job -------------------------------------------
rm -f "$WORK"/env.*
INFERNO_JOB_SECRET=$(printf '%064d' 1) timeout 20 "$LAUNCH" -n 2 --nnodes 3 --node-rank 1 --master-addr 10.1.2.3 --master-port 4242 \
  -- "$ENV_DUMP" || fail "multi-node: launch failed"
[ "$(cat "$WORK/env.2")" = "2 6 0 2 10.1.2.3 4242 unset" ] || fail "multi-node: rank 2 saw '$(cat "$WORK/env.2" 2>&1)'"
[ "$(cat "$WORK/env.3")" = "3 6 1 2 10.1.2.3 4242 unset" ] || fail "multi-node: rank 3 saw '$(cat "$WORK/env.3" 2>&1)'"
[ "$(ls "$WORK"/env.* | wc -l)" -eq 2 ] || fail "multi-node: expected exactly ranks 2 and 3"

# --- CPU binding (--bind) ----------------------------------------------------
CPUS=$(program cpus.sh <<EOS
#!/bin/sh
grep Cpus_allowed_list /proc/self/status | awk '{print \$2}' > "$WORK/cpus.\$RANK"
EOS
)
mine=$(grep Cpus_allowed_list /proc/self/status | awk '{print $2}')
allowed=$(nproc)
if [ "$allowed" -ge 2 ]; then
  timeout 20 "$LAUNCH" -n 2 -- "$CPUS" || fail "bind: launch failed"
  first=$(cat "$WORK/cpus.0") second=$(cat "$WORK/cpus.1")
  [ "$first" != "$second" ] || fail "bind: both ranks on CPUs $first"
  if [ "$allowed" -eq 2 ]; then
    case "$first $second" in
      *-* | *,*) fail "bind: on 2 CPUs each of 2 ranks should run on one, got '$first' and '$second'" ;;
    esac
  fi
  # One rank keeps every CPU, for its threads.
  timeout 20 "$LAUNCH" -n 1 -- "$CPUS" || fail "bind, one rank: launch failed"
  [ "$(cat "$WORK/cpus.0")" = "$mine" ] || fail "bind, one rank: got '$(cat "$WORK/cpus.0")', want '$mine'"
  timeout 20 "$LAUNCH" -n 2 --bind none -- "$CPUS" || fail "bind none: launch failed"
  [ "$(cat "$WORK/cpus.1")" = "$mine" ] || fail "bind none: rank 1 got '$(cat "$WORK/cpus.1")', want '$mine'"
fi
timeout 20 "$LAUNCH" -n $((allowed + 1)) -- "$CPUS" || fail "bind, more ranks than CPUs: launch failed"
[ "$(cat "$WORK/cpus.0")" = "$mine" ] || fail "bind, more ranks than CPUs: rank 0 got '$(cat "$WORK/cpus.0")', want '$mine'"
rm -f "$WORK"/cpus.*

# --- output -------------------------------------------------------------------
TALK=$(program talk.sh <<'EOS'
#!/bin/sh
printf 'out %s\nsecond line\nno newline' "$RANK"
echo "err $RANK" >&2
EOS
)
out=$(timeout 20 "$LAUNCH" -n 1 -- "$TALK" 2>/dev/null)
[ "$out" = "$(printf 'out 0\nsecond line\nno newline')" ] || fail "untagged output changed: '$out'"
out=$(timeout 20 "$LAUNCH" -n 3 --tag-output -- "$TALK" 2>"$WORK/tagged.err")
for r in 0 1 2; do
  [ "$(echo "$out" | grep -c "^\[$r\] ")" -eq 3 ] || fail "tagged: rank $r lines wrong in '$out'"
  echo "$out" | grep -qx "\[$r\] out $r" || fail "tagged: missing '[$r] out $r' in '$out'"
  echo "$out" | grep -qx "\[$r\] no newline" || fail "tagged: missing '[$r] no newline'"
  grep -qx "\[$r\] err $r" "$WORK/tagged.err" || fail "tagged: stderr of rank $r not tagged"
done
[ "$(echo "$out" | wc -l)" -eq 9 ] || fail "tagged: want 9 lines, got '$out'"

# --- exit statuses ------------------------------------------------------------
EXIT_IF_RANK=$(program exit_if_rank.sh <<EOS
#!/bin/sh
# Usage: exit_if_rank.sh FAILING_RANK HOW  (HOW: a status, or KILL/SEGV)
echo \$\$ > "$WORK/pid.\$RANK"
if [ "\$RANK" = "\$1" ]; then
  sleep 0.3
  case "\$2" in
    [0-9]*) exit "\$2" ;;
    *) kill -"\$2" \$\$ ;;
  esac
fi
sleep 60 &
echo \$! >> "$WORK/pid.\$RANK"
wait
EOS
)
rm -f "$WORK"/pid.*
start=$(date +%s)
timeout 30 "$LAUNCH" -n 4 --grace 5 -- "$EXIT_IF_RANK" 2 3 2>"$WORK/exit.err"
status=$?
elapsed=$(( $(date +%s) - start ))
[ "$status" -eq 3 ] || fail "exit 3 of rank 2: launch exited $status, want 3"
[ "$elapsed" -le 4 ] || fail "exit 3 of rank 2: took ${elapsed}s to stop the others (SIGTERM should suffice)"
grep -q "rank 2 (pid [0-9]*) exited with status 3" "$WORK/exit.err" || fail "exit: no message naming rank 2: $(cat "$WORK/exit.err")"
expect_all_gone "exit 3 of rank 2" "$WORK"/pid.*

rm -f "$WORK"/pid.*
timeout 30 "$LAUNCH" -n 3 -- "$EXIT_IF_RANK" 1 KILL 2>/dev/null
status=$?
[ "$status" -eq 137 ] || fail "SIGKILL of rank 1: launch exited $status, want 137"
expect_all_gone "SIGKILL of rank 1" "$WORK"/pid.*

# --failover: a lost rank, rank 0 included, leaves the others running; the
# first rank to exit 0 ends the job with 0 (the others are stopped).
SURVIVORS=$(program survivors.sh <<EOS
#!/bin/sh
# Usage: survivors.sh FAILING_RANK  (killed after 0.3 s; the others exit 0 after 1.5 s, rank 2 first)
echo \$\$ > "$WORK/pid.\$RANK"
if [ "\$RANK" = "\$1" ]; then sleep 0.3; kill -KILL \$\$; fi
sleep 1.5
[ "\$RANK" = 2 ] || sleep 5
echo "rank \$RANK done"
EOS
)
for lost in 1 0; do
  rm -f "$WORK"/pid.*
  timeout 30 "$LAUNCH" -n 3 --failover --grace 1 -- "$SURVIVORS" $lost >"$WORK/failover.out" 2>"$WORK/failover.err"
  status=$?
  [ "$status" -eq 0 ] || fail "--failover, rank $lost killed: launch exited $status, want 0 (rank 2's)"
  [ "$(cat "$WORK/failover.out")" = "rank 2 done" ] ||
    fail "--failover, rank $lost killed: the survivors' output: $(cat "$WORK/failover.out")"
  grep -q "rank $lost (pid [0-9]*) was killed by signal 9 .*--failover: 2 ranks carry on without it" "$WORK/failover.err" ||
    fail "--failover: no message naming rank $lost: $(cat "$WORK/failover.err")"
  grep -q "rank 2 exited with status 0; --failover: stopping 1 ranks still running" "$WORK/failover.err" ||
    fail "--failover, rank $lost killed: no message naming rank 2's exit: $(cat "$WORK/failover.err")"
  expect_all_gone "--failover, rank $lost killed" "$WORK"/pid.*
done
# --standby: one more process with INFERNO_STANDBY in place of RANK (and
# every process knows how many standbys the job has); it is stopped when
# rank 0 exits.
rm -f "$WORK"/pid.*
STANDBY=$(program standby.sh <<EOS
#!/bin/sh
echo "\${RANK:-none} \${INFERNO_STANDBY:-none} \$INFERNO_STANDBY_RANKS \$WORLD_SIZE"
if [ -n "\${INFERNO_STANDBY:-}" ]; then echo \$\$ > "$WORK/pid.standby"; exec sleep 30; fi
[ "\$RANK" = 0 ] && sleep 1.5
EOS
)
timeout 30 "$LAUNCH" -n 2 --failover --standby 1 --grace 1 -- "$STANDBY" >"$WORK/standby.out" 2>"$WORK/standby.err"
status=$?
[ "$status" -eq 0 ] || fail "--standby 1: launch exited $status, want 0 (rank 0's)"
[ "$(sort "$WORK/standby.out" | tr '\n' ,)" = "0 none 1 2,1 none 1 2,none 0 1 2," ] ||
  fail "--standby 1: the environments: $(cat "$WORK/standby.out")"
grep -q "rank 0 exited with status 0; --failover: stopping 1 ranks still running" "$WORK/standby.err" ||
  fail "--standby 1: $(cat "$WORK/standby.err")"
expect_all_gone "--standby 1" "$WORK"/pid.*
# A frozen rank outlives rank 0's clean exit only by --grace.
rm -f "$WORK"/pid.*
FROZEN=$(program frozen.sh <<EOS
#!/bin/sh
echo \$\$ > "$WORK/pid.\$RANK"
if [ "\$RANK" = 1 ]; then kill -STOP \$\$; fi
sleep 0.5
EOS
)
timeout 30 "$LAUNCH" -n 2 --failover --grace 1 -- "$FROZEN" 2>"$WORK/frozen.err"
status=$?
[ "$status" -eq 0 ] || fail "--failover, rank 1 frozen, rank 0 exits 0: launch exited $status, want 0"
grep -q "rank 0 exited with status 0; --failover: stopping 1 ranks still running" "$WORK/frozen.err" ||
  fail "--failover, rank 1 frozen: $(cat "$WORK/frozen.err")"
expect_all_gone "--failover, rank 1 frozen" "$WORK"/pid.*
rm -f "$WORK"/pid.*
# Every rank failing in turn: the job's status is the last one's.
ALL_FAIL=$(program all_fail.sh <<EOS
#!/bin/sh
# rank R exits with status 3 + R after 0.3 (R + 1) s
sleep "0.\$((3 * (RANK + 1)))"
exit \$((3 + RANK))
EOS
)
timeout 30 "$LAUNCH" -n 3 --failover -- "$ALL_FAIL" 2>"$WORK/all_fail.err"
status=$?
[ "$status" -eq 5 ] || fail "--failover, every rank fails: launch exited $status, want 5 (rank 2's, the last)"
grep -q "rank 0 (pid [0-9]*) exited with status 3; --failover: 2 ranks carry on without it" "$WORK/all_fail.err" ||
  fail "--failover, rank 0 exits 3: $(cat "$WORK/all_fail.err")"

rm -f "$WORK"/pid.*
timeout 30 "$LAUNCH" -n 2 -- "$WORK/does-not-exist" 2>"$WORK/exec.err"
status=$?
[ "$status" -eq 127 ] || fail "missing program: launch exited $status, want 127"
grep -q "cannot run '$WORK/does-not-exist'" "$WORK/exec.err" || fail "missing program: message '$(cat "$WORK/exec.err")'"

# --- a rank that ignores SIGTERM is killed after the grace period -----------
STUBBORN=$(program stubborn.sh <<EOS
#!/bin/sh
trap '' TERM
echo \$\$ > "$WORK/pid.\$RANK"
[ "\$RANK" = 0 ] && { sleep 0.3; exit 5; }
while :; do sleep 0.1; done
EOS
)
rm -f "$WORK"/pid.*
start=$(date +%s)
timeout 30 "$LAUNCH" -n 3 --grace 1 -- "$STUBBORN" 2>"$WORK/stubborn.err"
status=$?
elapsed=$(( $(date +%s) - start ))
[ "$status" -eq 5 ] || fail "stubborn: launch exited $status, want 5"
[ "$elapsed" -le 4 ] || fail "stubborn: took ${elapsed}s with --grace 1"
grep -q "still running 1000 ms after SIGTERM; sending SIGKILL" "$WORK/stubborn.err" || fail "stubborn: no SIGKILL message: $(cat "$WORK/stubborn.err")"
expect_all_gone "stubborn" "$WORK"/pid.*

# --- --timeout ----------------------------------------------------------------
rm -f "$WORK"/pid.*
start=$(date +%s)
timeout 30 "$LAUNCH" -n 2 --timeout 1 -- "$EXIT_IF_RANK" none 0 2>/dev/null
status=$?
elapsed=$(( $(date +%s) - start ))
[ "$status" -eq 124 ] || fail "--timeout: launch exited $status, want 124"
[ "$elapsed" -le 4 ] || fail "--timeout 1 took ${elapsed}s"
expect_all_gone "--timeout" "$WORK"/pid.*

# --- SIGTERM / SIGINT to launch stop every rank -----------------------------
# Job control gives the background launch its own process group and keeps
# SIGINT at its default (a non-interactive shell ignores it in background jobs,
# and launch keeps an inherited "ignore", as nohup expects). launch's own
# --timeout bounds the wait; timeout(1) is not used here because the SIGCONT it
# sends after forwarding a signal races with LeakSanitizer's exit-time ptrace.
set -m
for sig in TERM INT; do
  rm -f "$WORK"/pid.*
  "$LAUNCH" -n 3 --timeout 30 -- "$EXIT_IF_RANK" none 0 2>/dev/null &
  launch_pid=$!
  wait_for_files 3 "$WORK/pid.*" || fail "SIG$sig: ranks never started"
  sleep 0.2  # let each rank record its sleeping child too
  kill -"$sig" "$launch_pid"
  wait "$launch_pid"
  status=$?
  want=$((128 + $(kill -l "$sig")))
  [ "$status" -eq "$want" ] || fail "SIG$sig to launch: exited $status, want $want"
  expect_all_gone "SIG$sig to launch" "$WORK"/pid.*
done
set +m

# --- launch killed with SIGKILL: the kernel kills its ranks -----------------
rm -f "$WORK"/pid.*
"$LAUNCH" -n 2 -- "$EXIT_IF_RANK" none 0 2>/dev/null &
launch_pid=$!
wait_for_files 2 "$WORK/pid.*" || fail "SIGKILL to launch: ranks never started"
kill -KILL "$launch_pid"
wait "$launch_pid" 2>/dev/null
# Only the ranks themselves (first line of each file) die with launch.
for f in "$WORK"/pid.*; do head -n 1 "$f"; done > "$WORK/rank_pids"
expect_all_gone "SIGKILL to launch" "$WORK/rank_pids"
for f in "$WORK"/pid.*; do tail -n +2 "$f"; done | xargs -r kill -KILL 2>/dev/null

# --- bad flags ----------------------------------------------------------------
"$LAUNCH" -n abc -- true 2>"$WORK/flags.err"
status=$?
[ "$status" -eq 2 ] || fail "bad flag: exited $status, want 2"
[ "$(cat "$WORK/flags.err")" = "launch: -n: expected an integer in [1, 4096], got 'abc'" ] ||
  fail "bad flag message: '$(cat "$WORK/flags.err")'"
"$LAUNCH" -n 1 --master-addr 192.0.2.1 -- true 2>"$WORK/addr.err"
status=$?
[ "$status" -eq 1 ] || fail "foreign --master-addr: exited $status, want 1"
grep -q "^launch: Io: --master-addr: cannot bind 192.0.2.1:0" "$WORK/addr.err" ||
  fail "foreign --master-addr message: '$(cat "$WORK/addr.err")'"

# --- a job secret by default, --insecure ---------------------------------------
SECRET_DUMP=$(program secret_dump.sh <<EOS
#!/bin/sh
echo "\${INFERNO_JOB_SECRET:-unset} \${INFERNO_INSECURE:-unset}" > "$WORK/secret.\$RANK"
EOS
)
(unset INFERNO_JOB_SECRET; timeout 20 "$LAUNCH" -n 2 -- "$SECRET_DUMP") || fail "default secret: launch failed"
secrets=$(cat "$WORK"/secret.* | sort -u)
[ "$(echo "$secrets" | wc -l)" -eq 1 ] || fail "ranks got different secrets"
echo "$secrets" | grep -Eq '^[0-9a-f]{64} unset$' || fail "'$secrets' is not 64 hex digits and no INFERNO_INSECURE"
(unset INFERNO_JOB_SECRET; timeout 20 "$LAUNCH" -n 1 -- "$SECRET_DUMP")
[ "$(cat "$WORK/secret.0")" != "$secrets" ] || fail "two jobs got the same fresh secret"
(unset INFERNO_JOB_SECRET; INFERNO_INSECURE=1 timeout 20 "$LAUNCH" -n 1 -- "$SECRET_DUMP")
grep -Eq '^[0-9a-f]{64} unset$' "$WORK/secret.0" || fail "launch's INFERNO_INSECURE=1 reached a rank beside a secret"
INFERNO_JOB_SECRET=$(printf '%064d' 7) timeout 20 "$LAUNCH" -n 1 --insecure -- "$SECRET_DUMP"
[ "$(cat "$WORK/secret.0")" = "unset 1" ] || fail "--insecure: a rank got '$(cat "$WORK/secret.0")'"
GIVEN=$(printf '%064d' 42)
INFERNO_JOB_SECRET=$GIVEN timeout 20 "$LAUNCH" -n 1 -- "$SECRET_DUMP"
[ "$(cat "$WORK/secret.0")" = "$GIVEN unset" ] || fail "launch did not pass on its own secret"
INFERNO_JOB_SECRET=tooshort "$LAUNCH" -n 1 -- true 2>"$WORK/secret.err"
status=$?
[ "$status" -eq 1 ] || fail "malformed secret: exited $status, want 1"
[ "$(cat "$WORK/secret.err")" = "launch: InvalidArgument: INFERNO_JOB_SECRET: expected 64 hex digits (32 bytes), got 8 characters" ] ||
  fail "malformed secret message: '$(cat "$WORK/secret.err")'"
# INFERNO_JOB_SECRET_FILE: checked by launch, passed on for the ranks to read,
# also to a multi-node job; dropped under --insecure.
FILE_DUMP=$(program secret_file_dump.sh <<EOS
#!/bin/sh
echo "\${INFERNO_JOB_SECRET:-unset} \${INFERNO_JOB_SECRET_FILE:-unset}" > "$WORK/secret_file.\$RANK"
EOS
)
(umask 077 && printf '%064d\n' 5 >"$WORK/job_secret")
(unset INFERNO_JOB_SECRET; INFERNO_JOB_SECRET_FILE="$WORK/job_secret" timeout 20 "$LAUNCH" -n 1 -- "$FILE_DUMP")
[ "$(cat "$WORK/secret_file.0")" = "unset $WORK/job_secret" ] || fail "secret file: a rank got '$(cat "$WORK/secret_file.0")'"
(unset INFERNO_JOB_SECRET; INFERNO_JOB_SECRET_FILE="$WORK/job_secret" timeout 20 "$LAUNCH" -n 1 --insecure -- "$FILE_DUMP")
[ "$(cat "$WORK/secret_file.0")" = "unset unset" ] || fail "secret file with --insecure: a rank got '$(cat "$WORK/secret_file.0")'"
chmod 640 "$WORK/job_secret"
(unset INFERNO_JOB_SECRET; INFERNO_JOB_SECRET_FILE="$WORK/job_secret" "$LAUNCH" -n 1 -- true 2>"$WORK/secret_file.err")
grep -q "^launch: InvalidArgument: INFERNO_JOB_SECRET_FILE='$WORK/job_secret' has mode 0640, which lets others read or change it: chmod 600 it$" "$WORK/secret_file.err" ||
  fail "secret file of mode 0640: '$(cat "$WORK/secret_file.err")'"
INFERNO_JOB_SECRET=$GIVEN INFERNO_JOB_SECRET_FILE="$WORK/job_secret" "$LAUNCH" -n 1 -- true 2>"$WORK/secret_both.err"
grep -q "^launch: InvalidArgument: both INFERNO_JOB_SECRET and INFERNO_JOB_SECRET_FILE are set: unset one$" "$WORK/secret_both.err" ||
  fail "secret and secret file: '$(cat "$WORK/secret_both.err")'"
(unset INFERNO_JOB_SECRET; "$LAUNCH" -n 1 --nnodes 2 --master-port 1 -- true 2>"$WORK/nodes.err")
grep -q "^launch: InvalidArgument: a job of 2 nodes needs the same INFERNO_JOB_SECRET exported on every node (make one with job_key), or INFERNO_JOB_SECRET_FILE naming a file every node reads, or --insecure$" "$WORK/nodes.err" ||
  fail "multi-node job without a secret: '$(cat "$WORK/nodes.err")'"

# --- --transport ----------------------------------------------------------------
TRANSPORT_DUMP=$(program transport_dump.sh <<EOS
#!/bin/sh
echo "\${INFERNO_TRANSPORT:-unset}" > "$WORK/transport.\$RANK"
EOS
)
(INFERNO_TRANSPORT=zmq timeout 20 "$LAUNCH" -n 2 --transport shm -- "$TRANSPORT_DUMP") || fail "--transport: launch failed"
[ "$(cat "$WORK"/transport.* | sort -u)" = shm ] || fail "--transport shm: ranks got '$(cat "$WORK"/transport.*)'"
(unset INFERNO_TRANSPORT; timeout 20 "$LAUNCH" -n 1 -- "$TRANSPORT_DUMP")
[ "$(cat "$WORK/transport.0")" = unset ] || fail "without --transport a rank got INFERNO_TRANSPORT"

rm -rf "$WORK"
if [ "$FAILURES" -ne 0 ]; then
  echo "$FAILURES check(s) failed" >&2
  exit 1
fi
echo "PASS"
