#!/bin/bash
# Worker hosts without the model (infer --fetch-weights, --cache): a job of
# two "hosts" (network namespaces on a bridge, tests/test_lib.sh's
# bridged_hosts), each under its own `launch --nnodes 2`. Host 1 runs in a
# mount namespace of its own where the models' folder is an empty tmpfs: it
# cannot read the model file, and is not given one.
# 1. Host 1 receives its shard from rank 0 into its --cache; the tokens are
#    the 1-rank tokens (the toy model, and stories260K when
#    ../shared/models has it).
# 2. The second start with the same --cache receives 0 bytes, same tokens.
# 3. A corrupted cache entry is detected, said, fetched again (the chosen
#    behaviour, docs/deploy.md), and the tokens are the same; no ".partial"
#    file is left in the cache.
# Rank 0 has a --cache of its own: it hashes the shard on the first start,
#    then takes its digests from there (loader/digest_memo.h) — but hashes
#    again once the model file's modification time changed.
# 4. A mixture of experts under --ep 2 (host 1 receives whole experts, and
#    must plan its shard as rank 0 cut it) and under --tp 2: the tokens are
#    the 1-rank tokens.
# Needs root (namespaces, mounts); prints a SKIP line and passes otherwise.
#
# Usage: infer_fetch_weights_test.sh LAUNCH INFER MAKE_TOY_MODEL
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/fetch.XXXXXX")"
ID="ifw$$"
NAMESPACES=()

cleanup() {
  remove_namespaces
  rm -rf "$WORK"
}
trap cleanup EXIT

bridged_hosts "$ID" || exit 0
launcher_models
mkdir -p "$WORK/models"
cp -r "$WORK/toy" "$WORK/models/toy"
[ -n "${STORIES:-}" ] && [ -f "$STORIES" ] && cp "$STORIES" "$WORK/models/stories260K.bin"
INFERNO_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export INFERNO_JOB_SECRET
MASTER_PORT=$((20000 + RANDOM % 20000)) # free: nothing else runs in these namespaces

# fetch_job NAME MODEL_PATH ARGS...: rank 0 on host 0 with --model
# MODEL_PATH, rank 1 on host 1 without it, both --fetch-weights and ARGS;
# leaves $WORK/NAME.{0,1}.{out,err}; counts a failed check if either fails.
fetch_job() {
  local name="$1" model="$2" r pids=()
  shift 2
  MASTER_PORT=$((MASTER_PORT + 1))
  local node=("$LAUNCH" -n 1 --nnodes 2 --master-addr "$BRIDGED_SUBNET.1" --master-port "$MASTER_PORT"
    --timeout 120 --grace 2)
  ip netns exec "${ID}h0" "${node[@]}" --node-rank 0 -- "$INFER" --fetch-weights --model "$model" \
    --cache "$WORK/cache0" "$@" \
    >"$WORK/$name.0.out" 2>"$WORK/$name.0.err" &
  pids+=($!)
  ip netns exec "${ID}h1" unshare -m /bin/sh -c 'mount -t tmpfs none "$0" && exec "$@"' "$WORK/models" \
    "${node[@]}" --node-rank 1 -- "$INFER" --fetch-weights --cache "$WORK/cache" "$@" \
    >"$WORK/$name.1.out" 2>"$WORK/$name.1.err" &
  pids+=($!)
  for r in 0 1; do
    if ! wait "${pids[$r]}"; then
      cat "$WORK/$name.$r.err" >&2
      fail "$name: host $r exited non-zero"
    fi
  done
}

# received NAME: the bytes host 1 says it received.
received() {
  sed -n 's/.*weights: received \([0-9]*\) bytes.*/\1/p' "$WORK/$1.1.err"
}

# remembered NAME N: rank 0 says it took N shard digests from its --cache.
remembered() {
  grep -q "($2 shard digest(s) remembered from --cache)" "$WORK/$1.0.err" ||
    fail "$1: rank 0 did not take $2 shard digests from its cache: $(grep 'sent .* bytes' "$WORK/$1.0.err")"
}

same_tokens() {
  if [ ! -s "$WORK/$1.0.out" ] || ! cmp -s "$WORK/$1.0.out" "$WORK/$model.one.ids"; then
    fail "$1: host 0 printed '$(cat "$WORK/$1.0.out")', one rank '$(cat "$WORK/$model.one.ids")'"
  fi
}

for model in "${MODELS[@]}"; do
  use_model "$model"
  ARGS=("${ARGS[@]:2}") # drop --model PATH: fetch_job gives it to host 0 only
  path="$WORK/models/$model"
  [ "$model" = stories260K ] && path="$WORK/models/stories260K.bin"
  rm -rf "$WORK/cache"

  fetch_job "$model.first" "$path" "${ARGS[@]}"
  same_tokens "$model.first"
  bytes=$(received "$model.first")
  [ "${bytes:-0}" -gt 0 ] || fail "$model.first: host 1 received '${bytes}' bytes, expected its shard"
  grep -q "rank 0: sent $bytes bytes of weights to 1 rank" "$WORK/$model.first.0.err" ||
    fail "$model.first: rank 0 did not report sending $bytes bytes: $(grep weights "$WORK/$model.first.0.err")"

  remembered "$model.first" 0
  fetch_job "$model.cached" "$path" "${ARGS[@]}"
  same_tokens "$model.cached"
  [ "$(received "$model.cached")" = 0 ] ||
    fail "$model.cached: host 1 received '$(received "$model.cached")' bytes from a warm cache, expected 0"
  remembered "$model.cached" 1

  entry=$(ls "$WORK/cache"/*.safetensors)
  printf 'X' | dd of="$entry" bs=1 seek=200 conv=notrunc status=none
  fetch_job "$model.damaged" "$path" "${ARGS[@]}"
  same_tokens "$model.damaged"
  grep -q "a damaged entry" "$WORK/$model.damaged.1.err" ||
    fail "$model.damaged: host 1 did not say its cache entry was damaged: $(cat "$WORK/$model.damaged.1.err")"
  [ "$(received "$model.damaged")" = "$bytes" ] ||
    fail "$model.damaged: host 1 received '$(received "$model.damaged")' bytes, expected $bytes again"
  ls "$WORK/cache" | grep -q '\.partial$' && fail "$model: a .partial file is left in the cache"
  find "$path" -type f -exec touch {} +
  fetch_job "$model.touched" "$path" "${ARGS[@]}"
  same_tokens "$model.touched"
  remembered "$model.touched" 0
  echo "$model: host 1 received $bytes bytes, then 0 from its cache, then $bytes after damage"
done

"$MAKE_TOY" --out "$WORK/models/moe" --architecture qwen3_moe --experts 6 --layers 2 >/dev/null ||
  fail "make_toy_model qwen3_moe"
MOE_ARGS=(--prompt-ids "1 79 111 99 101" --output ids --max-new-tokens 24)
timeout 60 "$INFER" --model "$WORK/models/moe" "${MOE_ARGS[@]}" >"$WORK/moe.one.ids" 2>"$WORK/moe.one.err" ||
  fail "moe: one rank: $(cat "$WORK/moe.one.err")"
for split in ep tp; do
  rm -rf "$WORK/cache"
  fetch_job "moe.$split" "$WORK/models/moe" --$split 2 "${MOE_ARGS[@]}"
  model=moe same_tokens "moe.$split"
done
echo "moe: host 1 received $(received moe.ep) bytes under --ep 2, $(received moe.tp) under --tp 2"
[ "$FAILURES" -eq 0 ] || exit 1
echo PASS
