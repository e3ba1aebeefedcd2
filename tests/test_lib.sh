# Helpers shared by the multi-process sh_tests. Source it first, from the
# runfiles root (a test's working directory): `source tests/test_lib.sh`.
# A script calls `fail` for every failed check and ends with
# `[ "$FAILURES" -eq 0 ] || exit 1`.

FAILURES=0

# fail MESSAGE...: reports a failed check and counts it; the test goes on.
fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}

# skip REASON...: ends the test, passing as far as Bazel 4 can tell (it has
# no skip status), with the line "SKIP: REASON" in its log: .ci/run counts a
# test whose log holds such a line as skipped, not passed. A test that skips
# only part of its checks prints that line and goes on.
skip() {
  echo "SKIP: $*"
  exit 0
}

# now_ms: the wall clock in milliseconds. Bash's own clock, not date(1): the
# fault tests call it every 20 ms in their polling loops, and a fork and exec
# of date per call cost more CPU than the subshell alone (200 calls: 2.5 s
# against 1.3 s of user+sys on the loaded 2-core CI machine, 6 December).
now_ms() {
  local micros=${EPOCHREALTIME//[!0-9]/}
  echo $((micros / 1000))
}

# rank_pid LAUNCH_PID RANK [VARIABLE]: the pid of RANK among launch's
# children (with VARIABLE=INFERNO_STANDBY: of that standby rank).
rank_pid() {
  local pid
  for pid in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "${3:-RANK}=$2"; then
      echo "$pid"
      return
    fi
  done
}

# shared_model FILE: sets MODEL to FILE in ../shared/models beside the
# project's checkout (or $INFERNO_SHARED_MODELS); when it is absent, the test
# skips.
shared_model() {
  local checkout
  checkout="$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")"
  MODEL="${INFERNO_SHARED_MODELS:-$checkout/shared/models}/$1"
  if [ ! -f "$MODEL" ]; then
    skip "$MODEL not found (../shared/models is absent in a fresh clone)"
  fi
}

# infer_ids NAME WORLD ARGS...: runs $INFER on WORLD ranks under $LAUNCH with
# --output ids and ARGS (and --model $MODEL unless ARGS hold --shards);
# leaves $WORK/NAME.ids and $WORK/NAME.err. On failure prints the error
# output, counts a failed check and returns 1.
infer_ids() {
  local name="$1" world="$2"
  shift 2
  local source=(--model "$MODEL")
  [[ " $* " == *" --shards "* ]] && source=()
  if ! timeout 300 "$LAUNCH" -n "$world" --timeout 240 --grace 2 -- \
      "$INFER" "${source[@]}" --output ids "$@" >"$WORK/$name.ids" 2>"$WORK/$name.err"; then
    cat "$WORK/$name.err" >&2
    fail "$name: infer on $world ranks failed"
    return 1
  fi
}

# launcher_models: the models the real-launcher tests run (the toy one in
# $WORK/toy, and stories260K when ../shared/models has it) into MODELS,
# each one's 1-rank tokens into $WORK/NAME.one.ids; exits failing when a
# 1-rank run fails. Then `use_model NAME` sets ARGS to infer's flags for NAME.
launcher_models() {
  "$MAKE_TOY" --out "$WORK/toy" --layers 4 >/dev/null || { echo "FAIL: make_toy_model" >&2; exit 1; }
  MODELS=(toy)
  local checkout
  checkout="$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")"
  STORIES="${INFERNO_SHARED_MODELS:-$checkout/shared/models}/stories260K.bin"
  if [ -f "$STORIES" ]; then MODELS+=(stories260K); else echo "SKIP: $STORIES not found: the toy model only"; fi
  local model
  for model in "${MODELS[@]}"; do
    use_model "$model"
    timeout 60 "$INFER" "${ARGS[@]}" >"$WORK/$model.one.ids" 2>"$WORK/one.err" || {
      cat "$WORK/one.err" >&2
      echo "FAIL: infer on one rank ($model)" >&2
      exit 1
    }
    [ -s "$WORK/$model.one.ids" ] || { echo "FAIL: the 1-rank run printed nothing ($model)" >&2; exit 1; }
  done
}

use_model() {
  case "$1" in
    toy) ARGS=(--model "$WORK/toy" --prompt-ids "1 79 111 99 101 32 117 112 111 110") ;;
    stories260K) ARGS=(--model "$STORIES" --prompt-ids "1 403 407 261 378 431") ;;
  esac
  ARGS+=(--output ids --max-new-tokens 40)
}

# remove_namespaces: kills every process in the namespaces NAMESPACES
# lists (bridged_hosts fills it) and deletes them, with a host's /tmp/NAME
# if the caller made one.
remove_namespaces() {
  local ns pid
  for ns in "${NAMESPACES[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
    rm -rf "/tmp/$ns"
  done
}

# bridged_hosts ID: two "hosts", namespaces ID"h0" and ID"h1" (lo up), on
# the /24 $BRIDGED_SUBNET (ID"h0" holds .1, ID"h1" .2) that exists only
# inside them, joined by a bridge in namespace ID"br"; NAMESPACES lists the
# three for the caller's cleanup. Without the rights to make namespaces it
# prints a SKIP line and returns 1.
bridged_hosts() {
  local id="$1" r
  BRIDGED_SUBNET="10.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))"
  NAMESPACES=("${id}br" "${id}h0" "${id}h1")
  if ! ip netns add "${id}br" 2>"$WORK/netns.err"; then
    echo "SKIP: two hosts: cannot create network namespaces ($(head -1 "$WORK/netns.err"))"
    return 1
  fi
  ip -n "${id}br" link add br0 type bridge && ip -n "${id}br" link set br0 up
  for r in 0 1; do
    ip netns add "${id}h$r"
    ip -n "${id}h$r" link set lo up
    ip link add "${id}a$r" netns "${id}h$r" type veth peer name "${id}b$r" netns "${id}br"
    ip -n "${id}h$r" addr add "$BRIDGED_SUBNET.$((r + 1))/24" dev "${id}a$r"
    ip -n "${id}h$r" link set "${id}a$r" up
    ip -n "${id}br" link set "${id}b$r" master br0
    ip -n "${id}br" link set "${id}b$r" up
  done
}
