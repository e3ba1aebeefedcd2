// The official `openai` npm package (tools/fetch_openai_client.sh) against a
// running serve: completions and chat completions, JSON and streamed, and
// an error; logprobs; json_schema output; a tool-call round trip (tools and a
// named tool_choice, tool_calls back, streamed too, the tool's answer as a
// `role: "tool"` message, a final answer). Prints one PASS line, or FAIL lines
// and exits 1.
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

  const withLogprobs = await client.chat.completions.create({...chatRequest, logprobs: true, top_logprobs: 2});
  const entries = withLogprobs.choices[0].logprobs?.content ?? [];
  check(entries.length === withLogprobs.usage.completion_tokens && entries.every(
            (e) => e.logprob <= 0 && e.top_logprobs.length === 2 && e.top_logprobs[0].logprob >= e.logprob),
        'chat logprobs', withLogprobs.choices[0].logprobs);

  const schema = {type: 'object', properties: {name: {type: 'string', maxLength: 6}, n: {type: 'integer'}},
                  required: ['name', 'n']};
  for (let seed = 1; seed <= 3; seed++) {
    const answer = await client.chat.completions.create({
      model: 'toy', messages: [{role: 'user', content: 'JSON'}], max_tokens: 200, temperature: 1, seed,
      response_format: {type: 'json_schema', json_schema: {name: 'thing', schema}}});
    let value = null;
    try {
      value = JSON.parse(answer.choices[0].message.content);
    } catch (error) {}
    check(value && typeof value.name === 'string' && value.name.length <= 6 && Number.isInteger(value.n) &&
              Object.keys(value).length === 2,
          'json_schema answer', answer.choices[0].message.content);
  }

  const tools = [{type: 'function', function: {name: 'get_weather', parameters: {
    type: 'object', properties: {city: {type: 'string', maxLength: 8}}, required: ['city']}}}];
  const messages = [{role: 'user', content: 'Weather in Paris?'}];
  const toolRequest = {model: 'toy', messages, tools, max_tokens: 100, temperature: 0.5, seed: 7,
                       tool_choice: {type: 'function', function: {name: 'get_weather'}}};
  const called = await client.chat.completions.create(toolRequest);
  const calls = called.choices[0].message.tool_calls ?? [];
  check(called.choices[0].finish_reason === 'tool_calls' && calls.length === 1 &&
            calls[0].function.name === 'get_weather' &&
            typeof JSON.parse(calls[0].function.arguments).city === 'string',
        'tool call', called.choices[0]);
  let streamedArguments = '';
  let streamedName = '';
  let streamedFinish = null;
  for await (const chunk of await client.chat.completions.create({...toolRequest, stream: true})) {
    for (const choice of chunk.choices) {
      for (const delta of choice.delta.tool_calls ?? []) {
        streamedName += delta.function?.name ?? '';
        streamedArguments += delta.function?.arguments ?? '';
      }
      if (choice.finish_reason) streamedFinish = choice.finish_reason;
    }
  }
  check(calls.length === 1 && streamedName === 'get_weather' && streamedArguments === calls[0].function.arguments &&
            streamedFinish === 'tool_calls',
        'streamed tool call', [streamedName, streamedArguments, streamedFinish]);
  if (calls.length === 1) {
    const final = await client.chat.completions.create({
      model: 'toy', tools, max_tokens: 8, temperature: 0,
      messages: [...messages, called.choices[0].message,
                 {role: 'tool', tool_call_id: calls[0].id, content: '{"temperature": 21}'}]});
    check(final.choices[0].message.role === 'assistant' && typeof final.choices[0].message.content === 'string',
          'the answer after the tool', final.choices[0]);
  }

  try {
    await client.completions.create({...request, model: 'no-such-model'});
    check(false, 'an unknown model is refused', null);
  } catch (error) {
    check(error instanceof OpenAI.NotFoundError && error.code === 'model_not_found', 'unknown model error',
          String(error));
  }
  if (failures === 0) console.log('PASS: the openai package talks to serve (completions, chat, streams, errors, logprobs, json_schema, tool calls)');
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((error) => {
  console.log(`FAIL: ${error.stack}`);
  process.exit(1);
});
