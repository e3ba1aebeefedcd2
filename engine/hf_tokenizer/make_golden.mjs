// Writes the golden encodings engine/hf_tokenizer's tests compare against, from
// an independent implementation: @lenml/tokenizers (a fork of transformers.js's
// tokenizers), the library the @lenml/tokenizer-* packages are built for.
//
//   npm install --prefix /tmp/hf-ref @lenml/tokenizers@3.7.2
//   NODE_PATH=/tmp/hf-ref/node_modules node engine/hf_tokenizer/make_golden.mjs \
//       ~/.cache/inferno/tokenizers engine/hf_tokenizer/testdata
//
// For each tokenizer folder <dir>/<name>/models/ (llama3, qwen3, mistral) it writes
// <out>/<name>_golden.json: {"cases": [{"text", "ids", "decoded"}]}, where ids
// are the encoding without special tokens added and decoded is the decoding
// of ids with special tokens kept.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(import.meta.url);
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
];

const specials = {
  llama3: [
    "<|begin_of_text|>Hello<|eot_id|>",
    "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>",
    "text <|eot_id|> text",
    "<|eot_id|><|eot_id|>",
    "not special: <|eot_id| and <|foo|>",
    "</s> <s> <|im_start|>",
  ],
  qwen3: [
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "text <|im_end|> text",
    "<|endoftext|>",
    "<think>\nreasoning\n</think>\n\nanswer",
    "not special: <|im_start and <|eot_id|>",
    "</s> <s>",
  ],
  mistral: [
    "<s>Hello</s>",
    "Hello</s>world",
    "text </s> text",
    "[INST] What is 2+2? [/INST]",
    "<unk> and <s> inside",
    "<|eot_id|> <|im_start|>",
  ],
};

for (const name of Object.keys(specials)) {
  const models = path.join(tokenizersDir, name, "models");
  const tokenizerJSON = JSON.parse(fs.readFileSync(path.join(models, "tokenizer.json"), "utf8"));
  const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(models, "tokenizer_config.json"), "utf8"));
  const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
  const cases = [...common, ...specials[name]].map((text) => {
    const ids = tokenizer.encode(text, { add_special_tokens: false });
    const decoded =
      ids.length === 0
        ? ""
        : tokenizer.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
    return { text, ids, decoded };
  });
  const withBos = tokenizer.encode("Hello", { add_special_tokens: true });
  const out = { tokenizer: name, encode_hello_with_special_tokens: withBos, cases };
  fs.writeFileSync(path.join(outDir, `${name}_golden.json`), JSON.stringify(out, null, 1) + "\n");
  console.log(`${name}: ${cases.length} cases`);
}
