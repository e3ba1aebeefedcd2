#!/bin/bash
# //tools:shard end to end: shards a toy model, re-runs (verify and skip),
# repairs a damaged file, and fails with one-line errors on bad flags.
set -euo pipefail
SHARD="$1"
MAKE_TOY_MODEL="$2"
WORK="${TEST_TMPDIR:-$(mktemp -d)}"

fail() { echo "FAIL: $*" >&2; exit 1; }

"$MAKE_TOY_MODEL" --out "$WORK/model" --layers 5 > /dev/null

"$SHARD" --model "$WORK/model" --pp 3 --out "$WORK/shards" 2> "$WORK/first.log" || fail "first run: $(cat "$WORK/first.log")"
grep -q "pp=3 tp=1: 3 files written" "$WORK/first.log" || fail "first run summary: $(cat "$WORK/first.log")"
grep -q "^shard: .* (100%)" "$WORK/first.log" || fail "no progress line: $(cat "$WORK/first.log")"
for f in manifest.json rank-00000-of-00003.safetensors rank-00001-of-00003.safetensors rank-00002-of-00003.safetensors; do
  [[ -f "$WORK/shards/$f" ]] || fail "missing $f"
done
[[ -z "$(ls "$WORK/shards" | grep partial || true)" ]] || fail "partial files left behind"

"$SHARD" --model "$WORK/model" --pp 3 --out "$WORK/shards" 2> "$WORK/second.log"
grep -q "0 files written (0 bytes), 3 verified and kept" "$WORK/second.log" || fail "re-run did not skip: $(cat "$WORK/second.log")"

# Damage rank 1's last byte: the re-run rewrites exactly that file.
size=$(stat -c %s "$WORK/shards/rank-00001-of-00003.safetensors")
printf '\x7f' | dd of="$WORK/shards/rank-00001-of-00003.safetensors" bs=1 seek=$((size - 1)) conv=notrunc 2> /dev/null
"$SHARD" --model "$WORK/model" --pp 3 --out "$WORK/shards" 2> "$WORK/third.log"
grep -q "1 files written .* 2 verified and kept" "$WORK/third.log" || fail "damaged file not rewritten: $(cat "$WORK/third.log")"

# Bad flags: exit 1, one line naming the problem.
if "$SHARD" --model "$WORK/model" --pp 9 --out "$WORK/bad" 2> "$WORK/bad.log"; then fail "--pp 9 accepted"; fi
[[ "$(cat "$WORK/bad.log")" == "shard: InvalidArgument: --pp 9 exceeds the 5 layers of the model" ]] || fail "bad --pp message: $(cat "$WORK/bad.log")"
if "$SHARD" --model "$WORK/nowhere" --pp 1 --out "$WORK/bad" 2> "$WORK/bad.log"; then fail "missing model accepted"; fi
[[ $(wc -l < "$WORK/bad.log") -eq 1 ]] || fail "multi-line error: $(cat "$WORK/bad.log")"
[[ ! -e "$WORK/bad/manifest.json" ]] || fail "manifest written after a failure"
# Bounded memory: a 185 MiB model whose largest tensor (the embedding, 32000 x
# 256 f32) is 31.25 MiB must shard within 2 x 31.25 + 64 = 126.5 MiB of RSS.
"$MAKE_TOY_MODEL" --out "$WORK/big" --dim 256 --layers 40 --heads 4 --kv-heads 4 --vocab 32000 > /dev/null
/usr/bin/time -o "$WORK/time.txt" -f "%M" "$SHARD" --model "$WORK/big" --pp 4 --out "$WORK/big_shards" 2> /dev/null
rss_kb=$(cat "$WORK/time.txt")
model_kb=$(($(stat -c %s "$WORK/big/model.safetensors") / 1024))
bound_kb=$(((2 * 32000 * 256 * 4 + (64 << 20)) / 1024))
echo "peak RSS ${rss_kb} KiB sharding a ${model_kb} KiB model (bound ${bound_kb} KiB)"
((model_kb > bound_kb)) || fail "the model is too small to test the bound"
((rss_kb <= bound_kb)) || fail "peak RSS ${rss_kb} KiB exceeds ${bound_kb} KiB"
# Interrupted: damage a file of the finished folder, start a run and kill -9
# it once it writes (a .partial file appears): nothing may look finished (no
# manifest.json), and the next run repairs the folder.
printf '\x7f' | dd of="$WORK/big_shards/rank-00002-of-00004.safetensors" bs=1 seek=100 conv=notrunc 2> /dev/null
"$SHARD" --model "$WORK/big" --pp 4 --out "$WORK/big_shards" 2> /dev/null &
victim=$!
for ((i = 0; i < 2000; i++)); do
  compgen -G "$WORK/big_shards/*.partial" > /dev/null && break
  sleep 0.005
done
kill -9 "$victim" 2> /dev/null || true
if wait "$victim"; then
  echo "the run finished before it could be killed; interruption not checked"
else
  [[ ! -e "$WORK/big_shards/manifest.json" ]] || fail "an interrupted run left manifest.json"
fi
"$SHARD" --model "$WORK/big" --pp 4 --out "$WORK/big_shards" 2> "$WORK/repair.log" || fail "repair run: $(cat "$WORK/repair.log")"
grep -q "pp=4 tp=1: [1-4] files written" "$WORK/repair.log" || fail "repair run summary: $(cat "$WORK/repair.log")"
"$SHARD" --model "$WORK/big" --pp 4 --out "$WORK/big_shards" 2> "$WORK/final.log"
grep -q "0 files written (0 bytes), 4 verified and kept" "$WORK/final.log" || fail "after repair: $(cat "$WORK/final.log")"
echo PASS
