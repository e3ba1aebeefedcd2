// The official `openai` npm package (tools/fetch_openai_client.sh) against
// two running serves of one model, the first without speculative decoding
// and the second with --speculate: greedy completions of a prompt that
// repeats itself, JSON and streamed, a greedy chat, and three concurrent
// completions (micro-batched) get the same text from both; a seeded sampled
// completion from the second is repeatable. Prints one PASS line, or FAIL
// lines and exits 1.
//
// Usage: node serve_speculate_client.cjs OPENAI_PACKAGE_DIR PLAIN_URL SPECULATING_URL
'use strict';
const [packageDir, plainURL, speculatingURL] = process.argv.slice(2);
const OpenAI = require(packageDir).default;

let failures = 0;
function check(ok, what, value) {
  if (!ok) {
    console.log(`FAIL: ${what}: ${JSON.stringify(value)}`);
    failures++;
  }
}

async function streamedText(stream) {
  let text = '';
  for await (const chunk of stream) {
    for (const choice of chunk.choices) text += choice.text;
  }
  return text;
}

const kPart = 'The cat sat on the mat. ';

async function main() {
  const [plain, speculating] = [plainURL, speculatingURL].map(
      (url) => new OpenAI({baseURL: url + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 60000}));
  const request = {model: 'toy', prompt: kPart.repeat(4), max_tokens: 48, temperature: 0};
  const [a, b] = await Promise.all([plain, speculating].map((c) => c.completions.create(request)));
  check(a.choices[0].text.length > 0, 'a greedy completion', a);
  check(a.choices[0].text === b.choices[0].text, 'greedy completion with and without speculation',
        [a.choices[0].text, b.choices[0].text]);
  check(a.usage.completion_tokens === b.usage.completion_tokens, 'completion_tokens', [a.usage, b.usage]);
  const streamed = await streamedText(await speculating.completions.create({...request, stream: true}));
  check(streamed === a.choices[0].text, 'streamed speculative completion', [streamed, a.choices[0].text]);

  const chatRequest = {model: 'toy', messages: [{role: 'user', content: kPart.repeat(3)}], max_tokens: 32,
                       temperature: 0};
  const chats = await Promise.all([plain, speculating].map((c) => c.chat.completions.create(chatRequest)));
  check(chats[0].choices[0].message.content === chats[1].choices[0].message.content, 'greedy chat',
        chats.map((c) => c.choices[0].message.content));

  const prompts = [kPart.repeat(2), 'Once upon a time, once upon a time, once', kPart];
  for (const client of [plain, speculating]) client.texts = [];
  for (const client of [plain, speculating]) {
    const answers = await Promise.all(
        prompts.map((prompt) => client.completions.create({...request, prompt, max_tokens: 40})));
    client.texts = answers.map((c) => c.choices[0].text);
  }
  check(JSON.stringify(plain.texts) === JSON.stringify(speculating.texts), 'concurrent greedy completions',
        [plain.texts, speculating.texts]);

  const sampled = {...request, temperature: 0.8, seed: 7};
  const [s1, s2] = [await speculating.completions.create(sampled), await speculating.completions.create(sampled)];
  check(s1.choices[0].text === s2.choices[0].text && s1.choices[0].text.length > 0,
        'a seeded sampled completion with speculation repeats', [s1.choices[0].text, s2.choices[0].text]);

  if (failures > 0) process.exit(1);
  console.log('PASS');
}

main().catch((error) => {
  console.log(`FAIL: ${error.stack || error}`);
  process.exit(1);
});
