#!/bin/bash
# //tools:infer under Open MPI's own mpirun, as a user runs it: no
# MASTER_ADDR, MASTER_PORT or rank variable of ours, only the job secret's
# file (INFERNO_JOB_SECRET_FILE). On 2 and 3 ranks the greedy tokens equal the
# 1-rank run's, printed once, on the toy model and on stories260K (when
# ../shared/models has it). A world without a secret, and a secret file
# others may read, each fail at once with a one-line error saying what to do.
# Skips when mpirun is absent (tools/install_deps.sh installs openmpi-bin).
#
# Usage: infer_mpirun_test.sh LAUNCH INFER MAKE_TOY_MODEL JOB_KEY
set -u
source tests/test_lib.sh
INFER="$2" MAKE_TOY="$3" JOB_KEY="$4"
command -v mpirun >/dev/null 2>&1 || skip "mpirun not found (tools/install_deps.sh installs openmpi-bin)"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_mpirun.XXXXXX")"
# The namespaces of the two-host part (and host1's TMPDIR, /tmp/NAME).
NAMESPACES=()
cleanup() {
  remove_namespaces
  rm -rf "$WORK"
}
trap cleanup EXIT

launcher_models
(umask 077 && "$JOB_KEY" >"$WORK/secret")

# Root needs --allow-run-as-root; 3 ranks on a 2-core machine need
# --oversubscribe. Open MPI keeps its session files (with Unix sockets,
# whose paths must be short) under TMPDIR: /tmp, not Bazel's deep test dir.
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)

# mpi_infer NAME WORLD [VAR=VALUE...]: $INFER on WORLD ranks of mpirun with
# only the given variables of ours; leaves $WORK/NAME.ids and .err, returns
# mpirun's status. Every wait is bounded: the rendezvous by 20 s, the run by
# 120 s.
mpi_infer() {
  local name="$1" world="$2"
  shift 2
  env -u MASTER_ADDR -u MASTER_PORT -u RANK -u WORLD_SIZE -u INFERNO_JOB_SECRET -u INFERNO_JOB_SECRET_FILE \
    -u INFERNO_INSECURE TMPDIR=/tmp INFERNO_RENDEZVOUS_TIMEOUT_MS=20000 "$@" \
    timeout -k 5 120 "${MPIRUN[@]}" -np "$world" "$INFER" "${ARGS[@]}" >"$WORK/$name.ids" 2>"$WORK/$name.err"
}

# same_tokens MODEL NAME: NAME.ids holds MODEL's 1-rank tokens.
same_tokens() {
  if cmp -s "$WORK/$1.one.ids" "$WORK/$2.ids"; then
    echo "$2: the 1-rank tokens ($(wc -w <"$WORK/$2.ids") ids)"
  else
    fail "$2 printed '$(head -c 300 "$WORK/$2.ids")', one rank '$(head -c 300 "$WORK/$1.one.ids")'"
  fi
}

for model in "${MODELS[@]}"; do
  use_model "$model"
  for world in 2 3; do
    if mpi_infer "$model.mpi$world" "$world" INFERNO_JOB_SECRET_FILE="$WORK/secret"; then
      same_tokens "$model" "$model.mpi$world"
    else
      fail "$model: mpirun -np $world failed: $(cat "$WORK/$model.mpi$world.err")"
    fi
  done
done

# expect_refusal NAME PATTERN: the run failed, and its error says PATTERN.
expect_refusal() {
  if grep -q "$2" "$WORK/$1.err"; then
    echo "$1: refused, saying '$2'"
  else
    cat "$WORK/$1.err" >&2
    fail "$1: expected an error saying '$2'"
  fi
}
use_model toy
if mpi_infer no_secret 2; then fail "mpirun -np 2 without a secret ran"; fi
expect_refusal no_secret "needs a secret: export INFERNO_JOB_SECRET"
chmod 644 "$WORK/secret"
if mpi_infer open_secret 2 INFERNO_JOB_SECRET_FILE="$WORK/secret"; then fail "a secret file others may read was used"; fi
expect_refusal open_secret "has mode 0644, which lets others read or change it: chmod 600 it"

# Two "hosts": network namespaces joined by a bridge on a subnet that exists
# only inside them. mpirun runs in host0's, and starts host1's daemon through
# an rsh agent that enters host1's namespace with a clean environment, as
# ssh would: the secret's file reaches host1 only through -x. Rank 1 then
# reaches rank 0 at mpirun's address on that subnet. Needs root.
two_hosts() {
  local id="mpi$$" subnet
  bridged_hosts "$id" || return
  subnet="$BRIDGED_SUBNET"
  mkdir -p "/tmp/${id}h1"
  cat >"$WORK/agent.sh" <<AGENT
#!/bin/bash
# mpirun's rsh agent: AGENT HOST COMMAND... runs COMMAND in HOST's namespace.
[ "\$1" = "$subnet.2" ] || { echo "agent: unknown host \$1" >&2; exit 1; }
shift
exec ip netns exec "${id}h1" env -i PATH="\$PATH" HOME="\$HOME" TMPDIR="/tmp/${id}h1" /bin/sh -c "\$*"
AGENT
  chmod +x "$WORK/agent.sh"
  local hosts=(--host "$subnet.1:1,$subnet.2:1" --mca plm_rsh_agent "$WORK/agent.sh")
  for model in "${MODELS[@]}"; do
    use_model "$model"
    if ip netns exec "${id}h0" env INFERNO_JOB_SECRET_FILE="$WORK/secret" INFERNO_RENDEZVOUS_TIMEOUT_MS=20000 \
      TMPDIR=/tmp timeout -k 5 120 "${MPIRUN[@]}" "${hosts[@]}" -np 2 -x INFERNO_JOB_SECRET_FILE \
      -x INFERNO_RENDEZVOUS_TIMEOUT_MS "$INFER" "${ARGS[@]}" >"$WORK/$model.hosts.ids" 2>"$WORK/$model.hosts.err"; then
      same_tokens "$model" "$model.hosts"
    else
      fail "$model: mpirun across two namespace hosts failed: $(cat "$WORK/$model.hosts.err")"
    fi
  done
  # Without -x, host1's rank has no secret and says so.
  use_model toy
  ip netns exec "${id}h0" env INFERNO_JOB_SECRET_FILE="$WORK/secret" INFERNO_RENDEZVOUS_TIMEOUT_MS=20000 TMPDIR=/tmp \
    timeout -k 5 120 "${MPIRUN[@]}" "${hosts[@]}" -np 2 "$INFER" "${ARGS[@]}" >"$WORK/hosts_no_x.ids" \
    2>"$WORK/hosts_no_x.err" && fail "two hosts without -x INFERNO_JOB_SECRET_FILE ran"
  expect_refusal hosts_no_x "needs a secret: export INFERNO_JOB_SECRET"
  # Host0 listed second: Open MPI 4.1 still puts rank 0 on mpirun's host.
  use_model toy
  ip netns exec "${id}h0" env INFERNO_JOB_SECRET_FILE="$WORK/secret" INFERNO_RENDEZVOUS_TIMEOUT_MS=20000 TMPDIR=/tmp \
    timeout -k 5 120 "${MPIRUN[@]}" --host "$subnet.2:1,$subnet.1:1" --mca plm_rsh_agent "$WORK/agent.sh" -np 2 \
    -x INFERNO_JOB_SECRET_FILE "$INFER" "${ARGS[@]}" >"$WORK/hosts_order.ids" 2>"$WORK/hosts_order.err" ||
    fail "host0 listed second: $(cat "$WORK/hosts_order.err")"
  same_tokens toy hosts_order
  # Only host1 in --host (mpirun on a login node): rank 0 runs away from
  # mpirun's address, and says where that address came from.
  ip netns exec "${id}h0" env INFERNO_JOB_SECRET_FILE="$WORK/secret" INFERNO_RENDEZVOUS_TIMEOUT_MS=20000 TMPDIR=/tmp \
    timeout -k 5 120 "${MPIRUN[@]}" --host "$subnet.2:2" --mca plm_rsh_agent "$WORK/agent.sh" -np 2 \
    -x INFERNO_JOB_SECRET_FILE "$INFER" "${ARGS[@]}" >"$WORK/hosts_swapped.ids" 2>"$WORK/hosts_swapped.err" &&
    fail "rank 0 away from mpirun's host ran"
  expect_refusal hosts_swapped "cannot listen on $subnet.1:[0-9]*: .*is mpirun's host (OMPI_MCA_orte_hnp_uri)"
  rm -rf "/tmp/${id}h1"
}
chmod 600 "$WORK/secret"
two_hosts

[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
