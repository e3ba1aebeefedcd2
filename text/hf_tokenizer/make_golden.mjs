// Writes the golden encodings text/hf_tokenizer's tests compare against, from
// an independent implementation: @lenml/tokenizers (a fork of transformers.js's
// tokenizers), the library the @lenml/tokenizer-* packages are built for.
//
//   npm install --prefix /tmp/hf-ref @lenml/tokenizers@3.7.2
//   NODE_PATH=/tmp/hf-ref/node_modules node text/hf_tokenizer/make_golden.mjs \
//       ~/.cache/inferno/tokenizers text/hf_tokenizer/testdata
//
// For each tokenizer folder <dir>/<name>/models/ (llama3, qwen3, mistral, gemma3) it writes
// <out>/<name>_golden.json: {"cases": [{"text", "ids", "decoded"}],
// "provenance"}, where ids are the encoding without special tokens added and
// decoded is the decoding of ids with special tokens kept, and provenance
// names the library and the tokenizer package, checked first against their
// pins (kLibrary here, tools/fetch_tokenizers.sh; ../golden_provenance.mjs).
//
// Besides the hand-written cases, kRandomCases strings glued together from
// fragments that stress the pre-tokenizer regexes and added-token matching
// (a fixed-seed generator: the output is reproducible).
//
// Left out on purpose: U+FEFF and U+0085 (NEL). JavaScript's \s matches
// U+FEFF and not U+0085; Unicode's White_Space, which Oniguruma (in Hugging
// Face tokenizers) and PCRE2 (here) use, is the other way round, so text
// with them splits differently in this reference.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

import { checkedLibrary, checkedTokenizerPackage } from "../golden_provenance.mjs";

const require = createRequire(import.meta.url);
const kLibrary = ["@lenml/tokenizers", "3.7.2",
  "sha512-tuap9T7Q80Czor8NHzxjlLNvxEX8MgFINzsBTV+lq1v7G+78YR3ZvBhmLsPHtgqExB4Q4kCJH6dhXOYWSLdHLw=="];
const library = checkedLibrary(...kLibrary);
const { TokenizerLoader } = require("@lenml/tokenizers");

const [tokenizersDir, outDir] = process.argv.slice(2);
if (!tokenizersDir || !outDir) {
  console.error("usage: make_golden.mjs TOKENIZERS_DIR OUT_DIR");
  process.exit(2);
}

const common = [
  "",
  " ",
  "   ",
  "Hello world",
  " Hello world",
  "Hello world ",
  "  leading and trailing  ",
  "multiple    spaces\tand\ttabs",
  "line one\nline two\n\nline four\r\nend\n",
  "\n\n\n",
  "1234567890 and 3.14159 and 1,000,000 and 007",
  "The year 2024 had 366 days.",
  "don't I'M we'll they've she'd it's YOU'RE",
  "def add(a, b):\n    return a + b  # sum\n",
  "for (int i = 0; i < n; ++i) { x[i] += y[i]; }",
  "Emoji: 😀👍🏽 👨‍👩‍👧 🇫🇷!",
  "中文分词测试，你好世界。",
  "日本語のテキストです。カタカナ",
  "한국어 텍스트",
  "e\u0301 and \u00e9 and A\u030a",
  "Ünïcödé façade naïve café",
  "Привет, мир! Καλημέρα κόσμε",
  "مرحبا بالعالم",
  "tabs\t\tand trailing newline\n",
  "a",
  "ab  cd   ef",
  "URL: https://example.com/path?q=1&r=two#frag",
  "!!!???...,,,;;;",
  "mixed123abc456DEF",
  "\u00a0non-breaking\u2009thin\u3000ideographic",
  "   leading spaces",
  "trailing spaces   ",
  "a\n\n\nb\r\n\r\nc",
  " \n \t \n",
  "x  \n  y\t\n\tz",
  "12345678901234567890",
  "3,14 1.5e-10 -42 +7 0x1F 1_000",
  "\u0663\u0664\u0665 \u00bd \u00b2 \u2167",
  "I'LL WE'VE rock'n'roll it\u2019s O'Neil''s",
  "<div class=\"a\">x &amp; y</div>",
  "if (x<=y && z!=w) { return a->b[i]; } // done",
  "#include <stdio.h>\nint main() { printf(\"%d\\n\", 42); }",
  "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
  "\u2764\ufe0f \ud83d\udc4b\ud83c\udffb \ud83c\udff3\ufe0f\u200d\ud83c\udf08 \ud83e\udd16",
  "Hello\u4e16\u754c123abc",
  "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35 \u0928\u092e\u0938\u094d\u0924\u0947 \u05e9\u05dc\u05d5\u05dd",
  "Ti\u1ebfng Vi\u1ec7t n\u0303 A\u030a z\u0337\u0322a\u0338l\u0335g\u0336o",
  "\u0000nul \u001b[31mred\u001b[0m \u200bzero\u200bwidth",
  "line\u2028sep\u0085next",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "!!!!!!!!!!!!!!!!!!!!????????........------______",
  "\u2581 literal metaspace \u2581\u2581x and <0x41> literal",
  "\u0120 \u010a byte-level lookalikes",
  "MiXeD CaSe WoRdS and ALLCAPS and lowercase",
  "tab\tseparated\tvalues\n1\t2\t3",
  "    def f(self):\n        pass\n\n\n    x = 1",
];

const specials = {
  llama3: [
    "<|begin_of_text|>Hello<|eot_id|>",
    "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>",
    "text <|eot_id|> text",
    "<|eot_id|><|eot_id|>",
    "not special: <|eot_id| and <|foo|>",
    "</s> <s> <|im_start|>",
    "<|eot_id|>\n\n",
    " <|eot_id|>",
    "<|eot_id|>text",
    "<<|eot_id|>>",
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
  ],
  qwen3: [
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "text <|im_end|> text",
    "<|endoftext|>",
    "<think>\nreasoning\n</think>\n\nanswer",
    "not special: <|im_start and <|eot_id|>",
    "</s> <s>",
    "<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
    " <|im_end|> ",
    "<|im_start|><|im_end|>",
    "<<|im_end|>>",
  ],
  mistral: [
    "<s>Hello</s>",
    "Hello</s>world",
    "text </s> text",
    "[INST] What is 2+2? [/INST]",
    "<unk> and <s> inside",
    "<|eot_id|> <|im_start|>",
    "<s><s>",
    "</s></s>",
    " </s> ",
    "<<s>>",
    "[INST] <<SYS>>\nsys\n<</SYS>>\n\nhi [/INST]",
  ],
  gemma3: [
    "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "text <end_of_turn> text",
    "<eos><pad>",
    "not special: <start_of_turn and <|im_end|>",
    " <end_of_turn> ",
    "<<end_of_turn>>",
    "<start_of_image> image <end_of_image>",
    "tabs\t\tand    runs of spaces   ",
  ],
};

const kRandomCases = 300;
const fragments = [
  "a", "b", "Z", "the", " ", "  ", "\n", "\r\n", "\t", "'s", "'LL", "'", "1", "12345", "0", ".", ",", "!", "?",
  "-", "_", "(", ")", "{", "}", "<", ">", "|", "<|", "|>", "\u00e9", "e\u0301", "\u00df", "\u4e2d", "\u6587",
  "\u65e5\u672c", "\ud55c", "\ud83d\ude00", "\ud83d\udc4d\ud83c\udffd", "\u200d", "\u00a0", "\u3000",
  "\u03a9", "\u00f1", "\u0663", "\u00bd", "\u2581", "\u0120", "<s>", "</s>", "<|eot_id|>", "<|im_end|>",
  "<think>", "\u2028", "\u0000", "\u001b", "\u0627", "\u05dd", "\u0e01", "\u0301", "...",
];

// Deterministic strings of up to 11 fragments.
function randomCases() {
  let state = 12345;
  const next = (n) => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state % n;
  };
  const texts = [];
  for (let i = 0; i < kRandomCases; ++i) {
    let text = "";
    for (let n = next(12); n > 0; --n) text += fragments[next(fragments.length)];
    texts.push(text);
  }
  return texts;
}

// Every package checked before anything is written.
const tokenizerPackages = Object.fromEntries(
  Object.keys(specials).map((name) => [name, checkedTokenizerPackage(tokenizersDir, name)]),
);
for (const name of Object.keys(specials)) {
  const provenance = { library, tokenizer: tokenizerPackages[name] };
  const models = path.join(tokenizersDir, name, "models");
  const tokenizerJSON = JSON.parse(fs.readFileSync(path.join(models, "tokenizer.json"), "utf8"));
  const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(models, "tokenizer_config.json"), "utf8"));
  const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
  const cases = [...common, ...specials[name], ...randomCases()].map((text) => {
    const ids = tokenizer.encode(text, { add_special_tokens: false });
    const decoded =
      ids.length === 0
        ? ""
        : tokenizer.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
    return { text, ids, decoded };
  });
  const withBos = tokenizer.encode("Hello", { add_special_tokens: true });
  const out = { tokenizer: name, encode_hello_with_special_tokens: withBos, cases, provenance };
  fs.writeFileSync(path.join(outDir, `${name}_golden.json`), JSON.stringify(out, null, 1) + "\n");
  console.log(`${name}: ${cases.length} cases`);
}
