#!/bin/bash
# Serving benchmark (not a test): //tools:serve on 2 ranks (launch) over the
# stories15M shape (dim 288, 6 layers, 6 heads, vocab 32000, context 512;
# random weights from make_toy_model, llama2.c's tokenizer.bin from
# ../shared/models when present, else byte-level), then tools/serve_bench.py
# at 1, 4, 8 and 16 concurrent streams. Prints the table recorded in
# docs/serving.md, and the CPU the machine's other processes used meanwhile.
#
#   bazel build --config=opt //tools:launch //tools:serve //tools:make_toy_model
#   [SERVE_FLAGS="--tp 2"] tools/serve_bench.sh bazel-bin/tools [TOKENS] [REQUESTS] [ROUNDS] [PNG]
#
# SERVE_FLAGS are added to serve's (by default the 2 ranks are 2 pipeline
# stages; "--tp 2" makes them one stage of 2 tensor-parallel ranks).
# With PNG, serve_bench.py also plots the latencies there (needs matplotlib).
set -u
BIN="$1" TOKENS="${2:-64}" REQUESTS="${3:-2}" ROUNDS="${4:-2}" PNG="${5:-}"
WORK="$(mktemp -d)"
trap 'kill -TERM "$RANK0" 2>/dev/null; wait "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
"$BIN/make_toy_model" --out "$WORK/s15m" --dim 288 --layers 6 --heads 6 --kv-heads 6 --vocab 32000 \
  --seq-len 512 >/dev/null || exit 1
TOKENIZER="$(dirname "$(readlink -f "$0")")/../../shared/models/tokenizer.bin"
[ -f "$TOKENIZER" ] || TOKENIZER=byte-level
"$BIN/launch" -n 2 -- "$BIN/serve" --model "$WORK/s15m" --model-name bench --tokenizer "$TOKENIZER" \
  --slots 16 --queue 64 --listen 127.0.0.1:0 ${SERVE_FLAGS:-} >"$WORK/out" 2>&1 &
SERVER=$!
for _ in $(seq 600); do
  URL=$(sed -n 's/.*listening on \(http:[^ ]*\)$/\1/p' "$WORK/out")
  [ -n "$URL" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" = 200 ] && break
  sleep 0.1
done
RANK0=$(for pid in $(pgrep -P "$SERVER"); do tr '\0' '\n' <"/proc/$pid/environ" | grep -qx RANK=0 && echo "$pid"; done)
echo "serve ${SERVE_FLAGS:-} on $URL (tokenizer $TOKENIZER), $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/serve_bench.py" "$URL" --tokens "$TOKENS" --requests "$REQUESTS" --rounds "$ROUNDS" \
  ${PNG:+--plot "$PNG"}
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
