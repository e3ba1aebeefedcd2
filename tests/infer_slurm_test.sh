#!/bin/bash
# //tools:infer under a real Slurm: the test starts a one-host cluster of its
# own (slurmctld and slurmd from Debian's slurm-wlm packages, in the
# foreground, on free ports, AuthType=auth/none, no cgroups), then
#   srun -n 2 infer ...              with INFERNO_JOB_SECRET only, and
#   sbatch --wait docs/inferno.sbatch (the script users copy), 2 tasks,
# and both print the 1-rank tokens (the toy model's, and stories260K's when
# ../shared/models has it); then a cluster of two "hosts" (network
# namespaces, a slurmd in each) runs srun -N 2 -n 2 with the same tokens: the ranks find rank 0 from Slurm's own
# variables (SLURM_STEP_NODELIST, SLURM_JOB_ID, SLURM_STEP_ID). Skips when
# the packages are absent (tools/install_deps.sh installs them) or when not
# root (slurmd launches tasks as their user, which needs root).
#
# Usage: infer_slurm_test.sh LAUNCH INFER MAKE_TOY_MODEL JOB_KEY SBATCH_SCRIPT
set -u
source tests/test_lib.sh
INFER="$2" MAKE_TOY="$3" JOB_KEY="$4" SBATCH_SCRIPT="$5"
for tool in slurmctld slurmd srun sbatch sinfo; do
  command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin" command -v "$tool" >/dev/null 2>&1 ||
    skip "$tool not found (tools/install_deps.sh installs slurmctld, slurmd and slurm-client)"
done
PATH="$PATH:/usr/sbin"
[ "$(id -u)" -eq 0 ] || skip "slurmd must run as root to start tasks"
HOST="$(hostname -s)"
getent hosts "$HOST" >/dev/null || skip "this host's name '$HOST' does not resolve"

WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_slurm.XXXXXX")"
# slurmd's step sockets live in its spool directory; Unix socket paths must
# be short, so not under Bazel's deep test directory.
SPOOL="$(mktemp -d /tmp/slurm_test.XXXXXX)"
PIDS=()
NAMESPACES=()
cleanup() {
  stop_cluster
  remove_namespaces
  rm -rf "$WORK" "$SPOOL"
}
trap cleanup EXIT

launcher_models

# Two free ports for the daemons, and a random first job id, so that jobs
# of concurrent runs of this test get different ports for their rank 0.
read -r CTLD_PORT SLURMD_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
FIRST_JOB=$((1000 + RANDOM * 30 + RANDOM % 30))

# in_ns NS COMMAND...: COMMAND in network namespace NS ("": this one). Not
# `ip netns exec`, which remounts /sys, where slurmd needs /sys/fs/cgroup.
in_ns() {
  local ns="$1"
  shift
  if [ -n "$ns" ]; then nsenter --net="/var/run/netns/$ns" "$@"; else "$@"; fi
}

# start_cluster NAME CONTROLLER_ADDRESS CPUS NODE=ADDRESS@NAMESPACE...: a
# cluster of its own config ($SPOOL/NAME/slurm.conf, exported as SLURM_CONF),
# slurmctld in the first node's namespace, one slurmd per node in its own,
# all in the foreground; CLIENT_NS is where srun and sbatch then run. Waits
# until every node is idle (20 s at most), else the test fails.
start_cluster() {
  local name="$1" controller="$2" cpus="$3" dir="$SPOOL/$1" node ns entry
  shift 3
  mkdir -p "$dir/state"
  export SLURM_CONF="$dir/slurm.conf"
  cat >"$SLURM_CONF" <<CONF
ClusterName=inferno-test
SlurmctldHost=$HOST($controller)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool_%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd_%n.pid
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
FirstJobId=$FIRST_JOB
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
CONF
  CLIENT_NS="${1#*@}"
  for entry in "$@"; do
    node="${entry%%=*}" ns="${entry#*@}"
    echo "NodeName=$node NodeAddr=$(echo "${entry#*=}" | cut -d@ -f1) CPUs=$cpus State=UNKNOWN" >>"$SLURM_CONF"
  done
  echo "PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP OverSubscribe=FORCE" >>"$SLURM_CONF"
  in_ns "$CLIENT_NS" timeout 300 slurmctld -D -i -f "$SLURM_CONF" >"$WORK/$name.slurmctld.log" 2>&1 &
  PIDS+=($!)
  for entry in "$@"; do
    node="${entry%%=*}" ns="${entry#*@}"
    in_ns "$ns" timeout 300 slurmd -D -f "$SLURM_CONF" -N "$node" >"$WORK/$name.slurmd.$node.log" 2>&1 &
    PIDS+=($!)
  done
  for _ in $(seq 100); do
    [ "$(in_ns "$CLIENT_NS" timeout 5 sinfo -h -N -o %t 2>/dev/null | grep -c '^idle')" -eq $# ] && return
    sleep 0.2
  done
  tail -n 20 "$WORK/$name".*.log >&2
  echo "FAIL: the test's Slurm cluster '$name' did not come up within 20 s" >&2
  exit 1
}

# stop_cluster: ends the daemons started so far.
stop_cluster() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do
    timeout 10 tail --pid="$pid" -f /dev/null 2>/dev/null || kill -9 "$pid" 2>/dev/null
  done
  PIDS=()
}

start_cluster one 127.0.0.1 "$(nproc)" "$HOST=127.0.0.1@"

# same_tokens MODEL NAME: NAME.ids holds MODEL's 1-rank tokens.
same_tokens() {
  if cmp -s "$WORK/$1.one.ids" "$WORK/$2.ids"; then
    echo "$2: the 1-rank tokens ($(wc -w <"$WORK/$2.ids") ids)"
  else
    fail "$2 printed '$(head -c 300 "$WORK/$2.ids")', one rank '$(head -c 300 "$WORK/$1.one.ids")'"
  fi
}
for name in MASTER_ADDR MASTER_PORT RANK WORLD_SIZE INFERNO_JOB_SECRET INFERNO_JOB_SECRET_FILE INFERNO_INSECURE; do
  unset "$name"
done
export INFERNO_RENDEZVOUS_TIMEOUT_MS=20000
BIN="$(cd "$(dirname "$INFER")" && pwd)"
[ "$BIN" = "$(cd "$(dirname "$JOB_KEY")" && pwd)" ] || { echo "FAIL: infer and job_key are not side by side" >&2; exit 1; }

for model in "${MODELS[@]}"; do
  use_model "$model"
  if INFERNO_JOB_SECRET="$("$JOB_KEY")" timeout -k 5 120 srun -n 2 --kill-on-bad-exit=1 -t 2 \
    "$INFER" "${ARGS[@]}" >"$WORK/$model.srun.ids" 2>"$WORK/$model.srun.err"; then
    same_tokens "$model" "$model.srun"
  else
    fail "$model: srun -n 2 failed: $(cat "$WORK/$model.srun.err")"
  fi
  # -t overrides the script's 30 minutes, over this partition's limit.
  if INFERNO_BIN="$BIN" timeout -k 5 120 sbatch --wait -n 2 -t 2 -o "$WORK/$model.sbatch.ids" \
    -e "$WORK/$model.sbatch.err" "$SBATCH_SCRIPT" "${ARGS[@]}" >"$WORK/$model.submit" 2>&1; then
    same_tokens "$model" "$model.sbatch"
  else
    fail "$model: sbatch --wait failed: $(cat "$WORK/$model.submit" "$WORK/$model.sbatch.err" 2>&1)" \
      "$(squeue -h -o '%i %T %r')"
  fi
done

# The port of the next job's rank 0, held by another process: rank 0 fails
# at once naming it and where it came from; --kill-on-bad-exit ends rank 1.
# Slurm numbers jobs one after another: the next is the last sbatch's + 1.
last_job="$(grep -o 'Submitted batch job [0-9]*' "$WORK/${MODELS[-1]}.submit" | grep -o '[0-9]*$')"
[ -n "$last_job" ] || { echo "FAIL: no job id in '$(cat "$WORK/${MODELS[-1]}.submit")'" >&2; exit 1; }
taken_port=$((20000 + (last_job + 1) % 10000))
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen()
time.sleep(60)' "$taken_port" &
holder=$!
PIDS+=("$holder")
sleep 0.5
use_model toy
INFERNO_JOB_SECRET="$("$JOB_KEY")" timeout -k 5 60 srun -n 2 --kill-on-bad-exit=1 -t 2 \
  "$INFER" "${ARGS[@]}" >"$WORK/taken.ids" 2>"$WORK/taken.err" && fail "srun ran with rank 0's port $taken_port taken"
if grep -q "cannot listen on $HOST:$taken_port.*is the first host of SLURM_STEP_NODELIST and a port from SLURM_JOB_ID and SLURM_STEP_ID; export MASTER_ADDR and MASTER_PORT" "$WORK/taken.err"; then
  echo "port $taken_port taken: $(grep -m1 'cannot listen' "$WORK/taken.err")"
else
  fail "port $taken_port taken: expected rank 0 to name it: $(cat "$WORK/taken.err")"
fi
kill "$holder" 2>/dev/null
stop_cluster

# Two hosts: network namespaces joined by a bridge on a subnet that exists
# only inside them, a slurmd in each, named by its address (no name of
# theirs resolves); srun -N 2 -n 2 from the first. The step's node list is
# then "10.A.B.[1-2]", and rank 1 reaches rank 0 across the bridge.
two_hosts() {
  local id="slm$$" subnet
  bridged_hosts "$id" || return
  subnet="$BRIDGED_SUBNET"
  start_cluster two "$subnet.1" 1 "$subnet.1=$subnet.1@${id}h0" "$subnet.2=$subnet.2@${id}h1"
  for model in "${MODELS[@]}"; do
    use_model "$model"
    if INFERNO_JOB_SECRET="$("$JOB_KEY")" in_ns "$CLIENT_NS" timeout -k 5 120 srun -N 2 -n 2 --kill-on-bad-exit=1 \
      -t 2 "$INFER" "${ARGS[@]}" >"$WORK/$model.hosts.ids" 2>"$WORK/$model.hosts.err"; then
      same_tokens "$model" "$model.hosts"
    else
      fail "$model: srun -N 2 -n 2 across two namespace hosts failed: $(cat "$WORK/$model.hosts.err")"
    fi
  done
  stop_cluster
}
two_hosts

[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
