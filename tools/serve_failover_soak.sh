#!/bin/bash
# Failover soak and benchmark (not a test): tests/serve_failover_test.sh
# ROUNDS times, each a job without and one with a standby rank (launch
# --standby 1), with the victim (rank 1 or 2) and the moment of the SIGKILL
# (after 16 to 700 of the 8 streams' chunks, MAX_TOKENS each: 120 unless
# set) chosen at random, or at KILL_AFTER chunks if set, over the stories15M
# shape (dim 288, 6 layers, 6 heads, vocab 32000, context 512; random
# weights; llama2.c's tokenizer.bin from ../shared/models when present, else
# byte-level). Each round compares its 8 streams with an undisturbed run of
# its own, and checks that nothing is left running or in /dev/shm. Prints
# each round's lines, then how many passed and, for each side (failover:
# without a standby; standby: with one), the median and largest time from
# the kill to every stream's next chunk and the median decode rates (all
# streams' chunks per second) before the kill and after the failover, and
# the undisturbed job's over the same windows (marked at the same chunk).
#
#   bazel build --config=opt //tools:launch //tools:serve //tools:make_toy_model
#   tools/serve_failover_soak.sh bazel-bin/tools [ROUNDS]
#
# A grid job: GRID, GRID_AFTER, GRID_STANDBY and SAME_WITHOUT_STANDBY as
# tests/serve_failover_test.sh takes them, e.g. for --tp 3 (re-planned to
# --tp 2 without the standby, whose streams then report how many of 8 are
# identical rather than fail on a difference):
#   GRID="--tp 3" GRID_AFTER="1 stages x 2 tensor-parallel" \
#   GRID_STANDBY="1 stages x 3 tensor-parallel" SAME_WITHOUT_STANDBY=0 \
#   tools/serve_failover_soak.sh bazel-bin/tools 5
#
# GRID, GRID_AFTER and GRID_STANDBY apply with LEADER=1 too.
# With LEADER=1 the victim is rank 0, the leader, and each round runs
# tests/serve_leader_failover_test.sh instead (streams through
# serve_front; build //tools:serve_front too): an undisturbed job, then one
# job for each FAULT:STANDBYS of LEADER_FAULTS (default "KILL:1 KILL:0
# STOP:1 STOP:0": SIGKILL or SIGSTOP of rank 0, with a standby taking its
# place, leader-KILL-standby1, or rank 1 becoming the leader,
# leader-KILL-standby0); no decode rates are printed. For a STOP the time is
# from the SIGSTOP to every stream's next chunk (the stop is found by the
# liveness watch, 1.5 s, and by serve_front's --silence-ms, 3 s).
set -u
BIN="$(readlink -f "$1")" ROUNDS="${2:-20}"
cd "$(dirname "$(readlink -f "$0")")/.." || exit 1
TOKENIZER="$(pwd)/../shared/models/tokenizer.bin"
[ -f "$TOKENIZER" ] || TOKENIZER=byte-level
export SIGNALS=KILL STANDBY_SIGNALS=KILL TOKENIZER TOY_FLAGS="--dim 288 --layers 6 --heads 6 --kv-heads 6 --vocab 32000 --seq-len 512"
LOG="$(mktemp)" RESULTS="$(mktemp)"
passed=0
for round in $(seq "$ROUNDS"); do
  victim=$((1 + RANDOM % 2)) kill_after=${KILL_AFTER:-$((16 + RANDOM % 685))}
  if [ "${LEADER:-0}" = 1 ]; then
    victim=0
    FAULTS="${LEADER_FAULTS:-KILL:1 KILL:0 STOP:1 STOP:0}" KILL_AFTER=$kill_after \
      tests/serve_leader_failover_test.sh "$BIN/launch" "$BIN/serve" "$BIN/make_toy_model" \
      "$BIN/serve_front" tests/serve_continuation_check.py tests/serve_failover_client.py >"$LOG" 2>&1
  else
    VICTIM=$victim KILL_AFTER=$kill_after tests/serve_failover_test.sh "$BIN/launch" "$BIN/serve" \
      "$BIN/make_toy_model" tests/serve_failover_client.py >"$LOG" 2>&1
  fi
  if [ $? -eq 0 ]; then
    passed=$((passed + 1))
    grep -E '^(undisturbed|failover-KILL|standby-KILL|leader-[A-Z]+-standby[01]):' "$LOG" |
      sed "s/^/round $round: victim $victim after $kill_after chunks: /" | tee -a "$RESULTS"
  else
    echo "round $round: victim $victim after $kill_after chunks: FAILED"
    tail -20 "$LOG"
  fi
done
rm -f "$LOG"
echo "$passed/$ROUNDS rounds passed (uptime: $(uptime))"
# median FIELD_REGEX SIDE: the median of the numbers the regex's group catches on SIDE's lines.
median() {
  grep ": $2:" "$RESULTS" | sed -n "s/.*$1.*/\1/p" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) printf "%g (n=%d, largest %g)", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), NR, v[NR]; else printf "none" }'
}
SIDES="undisturbed failover-KILL standby-KILL"
if [ "${LEADER:-0}" = 1 ]; then
  SIDES=
  for fault in ${LEADER_FAULTS:-KILL:1 KILL:0 STOP:1 STOP:0}; do SIDES+=" leader-${fault%:*}-standby${fault#*:}"; done
fi
for side in $SIDES; do
  if [ "${LEADER:-0}" = 1 ]; then
    echo "$side: kill to every stream's next chunk (ms): $(median "to every stream's next chunk \([0-9]*\) ms" $side)"
    continue
  fi
  echo "$side: kill to every stream's next chunk (ms): $(median "to every stream's next chunk \([0-9]*\) ms" $side);" \
    "chunks/s before the kill (or mark): $(median "before the [a-z]* \([0-9.]*\)," $side);" \
    "after: $(median "after \([0-9.]*\)" $side);" \
    "after / before, per round: $(grep ": $side:" "$RESULTS" |
      sed -n 's/.*before the [a-z]* \([0-9.]*\), after \([0-9.]*\).*/\1 \2/p' |
      awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $2 / $1 }')"
done
rm -f "$RESULTS"
