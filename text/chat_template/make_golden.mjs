// Writes the golden renderings text/chat_template's golden_test compares
// against, from an independent implementation: @huggingface/jinja, the Jinja
// interpreter transformers.js renders chat templates with.
//
//   npm install --prefix /tmp/jinja-ref @huggingface/jinja@0.5.11
//   NODE_PATH=/tmp/jinja-ref/node_modules node text/chat_template/make_golden.mjs \
//       ~/.cache/inferno/tokenizers text/chat_template/testdata
//
// Templates: every <out>/*.jinja (well-known public templates: Llama 2
// [INST], Llama 3.1 and 3.2 Instruct, ChatML, Mistral Instruct v0.1 and
// v0.2, Zephyr/TinyLlama), rendered
// with bos_token "<s>" and eos_token "</s>"; and the chat_template of each
// real tokenizer_config.json in <dir>/<name>/models/ (llama3, qwen3, gemma3; the
// Mistral file has none), with its own bos_token and eos_token. For each it
// writes <out>/<name>_golden.json:
//   {"template": name, "bos_token", "eos_token",
//    "cases": [{"name", "messages", "add_generation_prompt", "extra",
//               "rendered" | "error"}],
//    "provenance": {"library", and for a real tokenizer's template "tokenizer"}}
// where "extra" holds further variables (enable_thinking, tools, date_string ...)
// where "error" means the reference raised (raise_exception), and
// "provenance" names the library and the tokenizer package, checked first
// against their pins (kLibrary here, tools/fetch_tokenizers.sh;
// ../golden_provenance.mjs).
//
// Variables are those transformers passes: messages, add_generation_prompt,
// bos_token and eos_token when set, tools and documents as none, and the
// case's extra variables.
//
// Left out on purpose, where @huggingface/jinja 0.5.11 departs from Jinja
// (Python): str.strip/lstrip/rstrip ignore their argument (strip('\n')
// strips all whitespace), and booleans and none print as "true"/"" instead
// of "True"/"None", and '' == false is true (JavaScript's loose equality;
// in Python '' != False). No case has whitespace other than newlines next to
// a <think> block, no template prints a boolean or none, and kDepartures
// lists the cases that meet the last one (Llama 2's `system_message != false`
// with an empty system message, which Python renders as an empty <<SYS>>
// block; chat_template_test checks that).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

import { checkedLibrary, checkedTokenizerPackage } from "../golden_provenance.mjs";

const require = createRequire(import.meta.url);
const kLibrary = ["@huggingface/jinja", "0.5.11",
  "sha512-YzEzwM5oQf4r0vs7ifWQ+yuVR1YkAHrjERQ+a8WRsStHHp4NRBg+NesjiFc+X2AFUpRvvrIeHDS1xFy9jY/IjQ=="];
const library = checkedLibrary(...kLibrary);
const { Template } = require("@huggingface/jinja");

const [tokenizersDir, outDir] = process.argv.slice(2);
if (!tokenizersDir || !outDir) {
  console.error("usage: make_golden.mjs TOKENIZERS_DIR OUT_DIR");
  process.exit(2);
}

const sys = (content) => ({ role: "system", content });
const user = (content) => ({ role: "user", content });
const assistant = (content) => ({ role: "assistant", content });
const tool = (content) => ({ role: "tool", content });

const conversations = {
  user_only: [user("Hello!")],
  system_and_user: [sys("You are a helpful assistant."), user("What is 2+2?")],
  multi_turn: [user("Hi"), assistant("Hello! How can I help?"), user("Tell me a joke.")],
  system_multi_turn: [
    sys("Answer briefly."),
    user("Capital of France?"),
    assistant("Paris."),
    user("And of Italy?"),
  ],
  ends_with_assistant: [user("Ping"), assistant("Pong")],
  empty_content: [user("")],
  empty_system: [sys(""), user("Hi")],
  unicode: [user("Привет, мир! 😀👍🏽 中文分词 e\u0301 café")],
  jinja_like_text: [user("{{ messages }} {% if true %}x{% endif %} {# comment #} {%- raw -%}")],
  quotes_and_backslashes: [user("He said \"hi\" and 'bye' \\ \\n \t tab")],
  surrounding_whitespace: [sys("  sys with spaces  "), user("\n\n  padded question \n"), assistant(" answer "), user("next")],
  newlines_inside: [user("line one\nline two\n\nline four")],
  special_tokens_in_text: [user("<s>[INST] <|im_start|> <|eot_id|> </s>")],
  think_block: [user("Solve it"), assistant("<think>\nsteps here\n</think>\n\nThe answer is 4."), user("Thanks")],
  think_last: [user("Solve it"), assistant("<think>\nsteps\n</think>\n\nDone.")],
  tool_result: [user("Weather?"), tool("{\"temp\": 21}"), tool("{\"rain\": false}")],
  not_alternating: [user("one"), user("two")],
  starts_with_assistant: [assistant("I start"), user("ok")],
  system_only: [sys("Only a system prompt.")],
  long_conversation: Array.from({ length: 9 }, (_, i) => (i % 2 === 0 ? user(`question ${i}`) : assistant(`answer ${i}`))),
};

// Cases the reference renders unlike Jinja, left out (see above).
const kDepartures = {
  llama2: ["empty_system"],
};

const kTools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather in a city, with \"quotes\", a back\\slash and ünïcode.",
      parameters: {
        type: "object",
        properties: { city: { type: "string", description: "City name" }, days: { type: "integer", minimum: 1 } },
        required: ["city"],
      },
    },
  },
  { type: "function", function: { name: "now", description: "", parameters: { type: "object", properties: {} } } },
];

// The variable sets each conversation is rendered with (default: none extra).
// Llama 3.2's template prints today's date (strftime_now) unless given
// date_string, so its cases always give one.
const kFixedDate = { date_string: "26 Jul 2024" };
const kExtras = {
  qwen3: [{}, { enable_thinking: false }, { tools: kTools }],
  llama3_1: [{}, { tools: kTools }, { tools: kTools, tools_in_user_message: false }],
  llama3_2: [kFixedDate, { ...kFixedDate, tools: kTools }, { ...kFixedDate, tools: kTools, tools_in_user_message: false }],
};

function render(template, variables) {
  try {
    return { rendered: template.render(variables) };
  } catch (error) {
    return { error: String(error.message ?? error) };
  }
}

function writeGolden(name, source, bos_token, eos_token, provenance) {
  const template = new Template(source);
  const cases = [];
  for (const [conversation, messages] of Object.entries(conversations)) {
    if ((kDepartures[name] ?? []).includes(conversation)) continue;
    for (const add_generation_prompt of [true, false]) {
      for (const extra of kExtras[name] ?? [{}]) {
        const variables = { messages, add_generation_prompt, tools: null, documents: null, ...extra };
        if (bos_token !== null) variables.bos_token = bos_token;
        if (eos_token !== null) variables.eos_token = eos_token;
        cases.push({ name: conversation, messages, add_generation_prompt, extra, ...render(template, variables) });
      }
    }
  }
  const out = { template: name, bos_token, eos_token, cases, provenance };
  fs.writeFileSync(path.join(outDir, `${name}_golden.json`), JSON.stringify(out, null, 1) + "\n");
  console.log(`${name}: ${cases.length} cases, ${cases.filter((c) => c.error !== undefined).length} raise`);
}

const tokenContent = (token) => (token === null || token === undefined ? null : token.content ?? token);

// Every package checked before anything is written.
const kRealTokenizers = ["llama3", "qwen3", "mistral", "gemma3"];
const tokenizerPackages = Object.fromEntries(
  kRealTokenizers.map((name) => [name, checkedTokenizerPackage(tokenizersDir, name)]),
);
for (const file of fs.readdirSync(outDir).filter((f) => f.endsWith(".jinja")).sort()) {
  writeGolden(path.basename(file, ".jinja"), fs.readFileSync(path.join(outDir, file), "utf8"), "<s>", "</s>", {
    library,
  });
}
for (const name of kRealTokenizers) {
  const config = JSON.parse(fs.readFileSync(path.join(tokenizersDir, name, "models", "tokenizer_config.json"), "utf8"));
  if (typeof config.chat_template !== "string") {
    console.log(`${name}: no chat_template`);
    continue;
  }
  writeGolden(name, config.chat_template, tokenContent(config.bos_token), tokenContent(config.eos_token), {
    library,
    tokenizer: tokenizerPackages[name],
  });
}
