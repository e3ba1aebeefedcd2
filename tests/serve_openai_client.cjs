// The official `openai` npm package (tools/fetch_openai_client.sh) against a
// running serve: completions and chat completions, JSON and streamed, and
// an error. Prints one PASS line, or FAIL lines and exits 1.
//
// Usage: node serve_openai_client.cjs OPENAI_PACKAGE_DIR BASE_URL API_KEY
'use strict';
const [packageDir, baseURL, apiKey] = process.argv.slice(2);
const OpenAI = require(packageDir).default;

let failures = 0;
function check(ok, what, value) {
  if (!ok) {
    console.log(`FAIL: ${what}: ${JSON.stringify(value)}`);
    failures++;
  }
}

async function streamedText(stream, chat) {
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      text += chat ? (choice.delta.content ?? '') : choice.text;
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return {text, finish};
}

async function main() {
  const client = new OpenAI({baseURL: baseURL + '/v1', apiKey, maxRetries: 0, timeout: 60000});
  const models = await client.models.list();
  check(models.data.length === 1 && models.data[0].id === 'toy', 'models.list', models.data);

  const request = {model: 'toy', prompt: 'Once upon a time', max_tokens: 20, temperature: 0.7, seed: 42};
  const completion = await client.completions.create(request);
  check(completion.object === 'text_completion', 'completion object', completion);
  check(['length', 'stop'].includes(completion.choices[0].finish_reason), 'completion finish_reason', completion);
  check(completion.usage.total_tokens === completion.usage.prompt_tokens + completion.usage.completion_tokens,
        'completion usage', completion.usage);
  const streamed = await streamedText(await client.completions.create({...request, stream: true}), false);
  check(streamed.text === completion.choices[0].text, 'streamed completion equals the JSON one',
        [streamed.text, completion.choices[0].text]);
  check(streamed.finish === completion.choices[0].finish_reason, 'streamed finish_reason', streamed.finish);

  const chatRequest = {model: 'toy', messages: [{role: 'user', content: 'Hello'}], max_tokens: 16, temperature: 0};
  const chat = await client.chat.completions.create(chatRequest);
  check(chat.object === 'chat.completion' && chat.choices[0].message.role === 'assistant', 'chat object', chat);
  const chatStreamed = await streamedText(await client.chat.completions.create({...chatRequest, stream: true}), true);
  check(chatStreamed.text === chat.choices[0].message.content, 'streamed chat equals the JSON one',
        [chatStreamed.text, chat.choices[0].message.content]);

  try {
    await client.completions.create({...request, model: 'no-such-model'});
    check(false, 'an unknown model is refused', null);
  } catch (error) {
    check(error instanceof OpenAI.NotFoundError && error.code === 'model_not_found', 'unknown model error',
          String(error));
  }
  if (failures === 0) console.log('PASS: the openai package talks to serve (completions, chat, streams, errors)');
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((error) => {
  console.log(`FAIL: ${error.stack}`);
  process.exit(1);
});
