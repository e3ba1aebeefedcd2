#!/bin/bash
# Prefix-cache benchmark (not a test): two //tools:serve jobs of 2 ranks
# each (launch) over the stories15M shape with a context of 4096 (dim 288,
# 6 layers, 6 heads, vocab 32000; random weights from make_toy_model), one
# with --cache-mib 0 and one with the default cache, then
# tools/chat_bench.py: a 10-turn chat with a ~2000-token history on each,
# round by round. Prints the table recorded in docs/serving.md.
# The tokenizer is byte-level (a token a byte), not llama2.c's tokenizer.bin:
# encoding a 10 KB prompt with that one took seconds on this machine, before
# the request reaches the generator, and the same on both sides, which
# would hide what the cache changes (see docs/serving.md).
#
#   bazel build --config=opt //tools:launch //tools:serve //tools:make_toy_model
#   [SERVE_FLAGS="--tp 2"] tools/chat_bench.sh bazel-bin/tools [ROUNDS]
set -u
BIN="$1" ROUNDS="${2:-3}"
WORK="$(mktemp -d)"
SERVERS=()
stop_all() {
  local server pid
  for server in "${SERVERS[@]}"; do
    for pid in $(pgrep -P "$server"); do
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx RANK=0 && kill -TERM "$pid"
    done
    wait "$server" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap stop_all EXIT
"$BIN/make_toy_model" --out "$WORK/s15m" --dim 288 --layers 6 --heads 6 --kv-heads 6 --vocab 32000 \
  --seq-len 4096 >/dev/null || exit 1
TOKENIZER=byte-level
URLS=()
for cache in 0 1024; do
  "$BIN/launch" -n 2 -- "$BIN/serve" --model "$WORK/s15m" --model-name bench --tokenizer "$TOKENIZER" \
    --slots 4 --cache-mib "$cache" --listen 127.0.0.1:0 ${SERVE_FLAGS:-} >"$WORK/out$cache" 2>&1 &
  SERVERS+=($!)
  URL=""
  for _ in $(seq 600); do
    URL=$(sed -n 's/.*listening on \(http:[^ ]*\)$/\1/p' "$WORK/out$cache")
    [ -n "$URL" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" = 200 ] && break
    sleep 0.1
  done
  URLS+=("$URL")
done
echo "serve ${SERVE_FLAGS:-} --cache-mib 0 on ${URLS[0]}, default cache on ${URLS[1]} (tokenizer $TOKENIZER)," \
  "$(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/chat_bench.py" "${URLS[0]}" "${URLS[1]}" --rounds "$ROUNDS"
curl -s "${URLS[1]}/metrics" | grep '^inferno_prefix_cache'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
