#!/bin/bash
# Strangers at a running job's ports: while a 3-rank pipeline-parallel
# //tools:infer generation runs under //tools:launch, //tests:stranger attacks
# every endpoint each rank listens on (found through /proc/net/{tcp,unix} and
# the rank's open sockets) with silent connections, garbage, oversized length
# fields and frames of another job. The job must succeed and print exactly the
# token ids of a clean run, and the ranks must log the frames they dropped.
# Every tcp endpoint a rank listens on must be on loopback.
#
# Every ipc:// endpoint must be a socket file in a directory of mode 0700
# owned by the user.
#
# With --secure JOB_KEY, the attacked job is launch's default (secured) one and
# the stranger's ZeroMQ connections are CURVE clients that know the job's
# public key (printed by JOB_KEY) but hold keys of their own. Then no frame of
# the stranger may reach a rank at all (no rank logs a dropped frame), and
# every rank must log that it refused the stranger's key. Without it, the
# attacked job runs under `launch --insecure`.
#
# With --flood, the stranger floods every endpoint with small messages for
# up to 3 s and then closes abruptly instead (stranger --flood), which made
# libzmq 4.3.4 abort ranks of an insecure job; the same checks apply.
#
# Usage: stranger_test.sh LAUNCH INFER MAKE_TOY_MODEL STRANGER [--secure JOB_KEY] [--flood]
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" STRANGER="$4"
shift 4
SECURE=0 LAUNCH_FLAGS=(--insecure) STRANGER_FLAGS=() ATTACK_MS=1000
if [ "${1:-}" = "--secure" ]; then
  SECURE=1
  INFERNO_JOB_SECRET=$("$2") || { echo "FAIL: job_key" >&2; exit 1; }
  export INFERNO_JOB_SECRET
  LAUNCH_FLAGS=()
  STRANGER_FLAGS=(--curve-server-key "$("$2" --public)")
  shift 2
fi
if [ "${1:-}" = "--flood" ]; then
  STRANGER_FLAGS+=(--flood)
  # The job must outlive the flood: under ASan on a loaded machine a 6 s
  # flood ran 9 s while 1000 tokens took 6.6 s (shared memory made the job
  # faster), so the flood is shorter and the job longer.
  ATTACK_MS=3000
fi
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/stranger.XXXXXX")"
WORLD=3

"$MAKE_TOY" --out "$WORK/toy" --dim 384 --layers 4 --seq-len 640 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }

# listening_endpoints PID: the tcp:// and ipc:// endpoints PID listens on.
listening_endpoints() {
  local inodes
  inodes=$(find "/proc/$1/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | sed 's/socket:\[\([0-9]*\)\]/\1/' | sort -u)
  [ -n "$inodes" ] || return
  # /proc/net/tcp: "sl local rem st ... inode"; state 0A is LISTEN; local is
  # the address as a little-endian hex word, then the port in hex.
  local address port
  awk -v inodes="$inodes" 'BEGIN { split(inodes, list, "\n"); for (i in list) want[list[i]] = 1 }
    NR > 1 && $4 == "0A" && ($10 in want) { sub(":", " ", $2); print $2 }' /proc/net/tcp |
    while read -r address port; do
      printf 'tcp://%d.%d.%d.%d:%d\n' "0x${address:6:2}" "0x${address:4:2}" "0x${address:2:2}" "0x${address:0:2}" "0x$port"
    done
  # /proc/net/unix: "Num RefCount Protocol Flags Type St Inode Path"; flag 00010000 is listening.
  awk -v inodes="$inodes" 'BEGIN { split(inodes, list, "\n"); for (i in list) want[list[i]] = 1 }
    NR > 1 && $4 == "00010000" && ($7 in want) && $8 != "" { print "ipc://" $8 }' /proc/net/unix
}

# The clean run, whose ids the attacked one must print. The job must still
# run when the attack ends, so its generation (infer's "total:", which
# starts after the ranks' start and rendezvous, as the attack does) is sized
# to take at least 2 x ATTACK_MS plus 3 s: a first short run measures this
# build's speed, and each run too short is scaled by its shortfall (x1.5),
# in tokens up to 512 a prompt (the toy's context is 640), then in prompts (up to 32). A fixed size was
# wrong both ways: -c opt generated 1500 tokens in 2.3 s, inside a 3 s
# flood, and the default fastbuild took 37 s for them, doubling the test's
# time for nothing. The launch's whole time was wrong too: on a loaded
# machine the ranks' start made a too-short job look long enough. And a
# token costs more the longer its sequence, so sequences of the whole
# context overshot (fastbuild: 700 tokens in 5.5 s, 2 x 2016 in 46.5 s).
tokens=100 prompts=1 target_ms=$((2 * ATTACK_MS + 3000)) max_tokens=512
while :; do
  INFER_ARGS=(--model "$WORK/toy" --max-new-tokens "$tokens" --output ids)
  for ((p = 0; p < prompts; p++)); do INFER_ARGS+=(--prompt "Once upon a time $p"); done
  timeout 120 env -u INFERNO_JOB_SECRET "$LAUNCH" -n "$WORLD" --insecure --timeout 100 --grace 2 -- "$INFER" "${INFER_ARGS[@]}" >"$WORK/clean.ids" 2>"$WORK/clean.err" ||
    { cat "$WORK/clean.err" >&2; fail "the clean run failed"; break; }
  clean_ms=$(sed -n 's/.*, total: \([0-9.]*\) s .*/\1/p' "$WORK/clean.err" | awk '{ printf "%d", $1 * 1000 }')
  [ -n "$clean_ms" ] || { cat "$WORK/clean.err" >&2; fail "the clean run printed no generation time"; break; }
  echo "clean run: $prompts prompt(s) of $tokens tokens generated in $clean_ms ms"
  [ "$clean_ms" -lt "$target_ms" ] && [ "$prompts" -lt 32 ] || break
  scale=$(((3 * target_ms + 2 * clean_ms - 1) / (2 * clean_ms)))
  [ "$scale" -ge 2 ] || scale=2
  tokens=$((tokens * scale))
  if [ "$tokens" -gt "$max_tokens" ]; then
    prompts=$((prompts * ((tokens + max_tokens - 1) / max_tokens)))
    [ "$prompts" -le 32 ] || prompts=32
    tokens=$max_tokens
  fi
done

attack_start_ms=$(now_ms)
"$LAUNCH" -n "$WORLD" "${LAUNCH_FLAGS[@]}" --timeout 100 --grace 2 -- "$INFER" "${INFER_ARGS[@]}" \
  >"$WORK/attacked.out" 2>"$WORK/attacked.err" &
launch_pid=$!

# Wait until every rank listens (after its rendezvous), then attack them all.
endpoints=()
deadline=$(($(now_ms) + 20000))
while [ "$(now_ms)" -lt "$deadline" ]; do
  endpoints=()
  ranks_listening=0
  for pid in $(pgrep -P "$launch_pid"); do
    mapfile -t mine < <(listening_endpoints "$pid")
    [ "${#mine[@]}" -gt 0 ] && ranks_listening=$((ranks_listening + 1))
    endpoints+=("${mine[@]}")
  done
  [ "$ranks_listening" -eq "$WORLD" ] && break
  sleep 0.02
done
echo "attacking: ${endpoints[*]}"
if [ "${ranks_listening:-0}" -lt "$WORLD" ]; then
  fail "only $ranks_listening of $WORLD ranks were found listening"
else
  for endpoint in "${endpoints[@]}"; do
    case "$endpoint" in
      tcp://127.0.0.1:*) ;;
      ipc:///*)
        directory=$(dirname "${endpoint#ipc://}")
        [ "$(stat -c '%a %u' "$directory")" = "700 $(id -u)" ] ||
          fail "$endpoint is not in a directory of mode 0700 owned by this user: $(stat -c '%a %u' "$directory")"
        ;;
      *) fail "a rank listens on $endpoint, not on loopback or an ipc socket file" ;;
    esac
  done
  "$STRANGER" "${STRANGER_FLAGS[@]}" "$ATTACK_MS" "${endpoints[@]}" || fail "stranger failed"
  kill -0 "$launch_pid" 2>/dev/null || fail "the job ended before the attacks did: they proved nothing"
fi
wait "$launch_pid" || fail "the attacked run failed (status $?)"
attack_seconds=$((($(now_ms) - attack_start_ms) / 1000 + 1))
cat "$WORK/attacked.err"
# Warnings about dropped or refused input are rate-limited (drop_log.h): per
# rank at most 20 lines a second for each of frames and connections, plus a
# summary line per source (at most 257) every 10 s, plus a few lines of the
# job's own.
err_lines=$(wc -l <"$WORK/attacked.err")
err_bound=$((WORLD * (2 * 20 * attack_seconds + 2 * 257 * (attack_seconds / 10 + 1)) + 50))
echo "attacked run: $err_lines stderr lines in ${attack_seconds} s (bound $err_bound)"
[ "$err_lines" -le "$err_bound" ] || fail "the attacks flooded stderr: $err_lines lines (bound $err_bound)"

if [ ! -s "$WORK/clean.ids" ]; then
  fail "the clean run printed no token ids"
elif ! cmp -s "$WORK/clean.ids" "$WORK/attacked.out"; then
  fail "the attacked run's token ids differ from the clean run's"
fi
for ((rank = 0; rank < WORLD; rank++)); do
  dropped=$(grep -c "rank $rank dropped" "$WORK/attacked.err")
  refused=$(grep -c "rank $rank refused a connection" "$WORK/attacked.err")
  echo "rank $rank logged $dropped dropped frames, $refused refused keys"
  if [ "$SECURE" -eq 1 ]; then
    [ "$dropped" -eq 0 ] || fail "a stranger's frame reached rank $rank of a secured job"
    [ "$refused" -gt 0 ] || fail "rank $rank refused no key: did the attacks reach it?"
  else
    [ "$dropped" -gt 0 ] || fail "rank $rank logged no dropped frame: did the attacks reach it?"
  fi
done

rm -rf "$WORK"
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS: the attacked job's output equals the clean run's"
