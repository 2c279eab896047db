// Tool calls and reasoning of a live `dq4 serve` through the official OpenAI client (pinned in
// package.json): node openai_tools_test.mjs BASE_URL MODEL. The server runs a random-weight model
// with the compact Hermes-style template (tests/server/tools_template.jinja) under
// --reasoning-parser qwen3: tool requests close the think block (enable_thinking false) so that
// the tool grammar holds from the first token. Exits non-zero on the first failed check; prints
// the number of checks passed.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const [url, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60000 });
let checks = 0;
const check = (name, f) => f().then(() => { checks++; }, (e) => { e.message = `${name}: ${e.message}`; throw e; });

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] }, days: { type: 'integer', minimum: 1, maximum: 7 } },
        required: ['city', 'days'],
        additionalProperties: false,
      },
      strict: true,
    },
  },
  { type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {}, additionalProperties: false } } },
];
const base = {
  model,
  messages: [{ role: 'user', content: 'Weather in Paris?' }],
  tools,
  max_tokens: 180,
  chat_template_kwargs: { enable_thinking: false },
};

function validCall(call) {
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_/);
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'now') return assert.deepEqual(args, {});
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(Object.keys(args).sort(), ['city', 'days']);
  assert.ok(['Paris', 'Oslo'].includes(args.city));
  assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7);
}

let named;
await check('tool_choice required', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ ...base, tool_choice: 'required', parallel_tool_calls: false, seed });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls');
    assert.equal(c.message.content, null);
    assert.equal(c.message.tool_calls.length, 1);
    validCall(c.message.tool_calls[0]);
  }
});

const namedRequest = { ...base, tool_choice: { type: 'function', function: { name: 'get_weather' } }, seed: 9 };
await check('a named function', async () => {
  named = await client.chat.completions.create(namedRequest);
  const calls = named.choices[0].message.tool_calls;
  assert.equal(calls.length, 1);
  assert.equal(calls[0].function.name, 'get_weather');
  validCall(calls[0]);
});

await check('a streamed tool call reassembled by the client', async () => {
  const stream = client.chat.completions.stream(namedRequest);
  let fragments = 0;
  stream.on('tool_calls.function.arguments.delta', () => { fragments++; });
  const final = await stream.finalChatCompletion();
  const calls = final.choices[0].message.tool_calls;
  assert.equal(calls.length, 1);
  validCall(calls[0]);
  assert.equal(calls[0].function.name, named.choices[0].message.tool_calls[0].function.name);
  assert.equal(calls[0].function.arguments, named.choices[0].message.tool_calls[0].function.arguments);
  assert.ok(fragments > 1, `arguments came in ${fragments} fragment(s)`);
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
});

await check('two turns with a tool result', async () => {
  const call = named.choices[0].message.tool_calls[0];
  const turn2 = await client.chat.completions.create({
    ...base,
    max_tokens: 6,
    seed: 4,
    messages: [...base.messages, named.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 C' }],
  });
  assert.ok(turn2.usage.prompt_tokens > named.usage.prompt_tokens + 10);
  assert.equal(turn2.choices[0].finish_reason, 'length');
  assert.equal(typeof turn2.choices[0].message.content, 'string');
});

await check('reasoning content', async () => {
  // The prompt is left inside <think>: what the model writes is reasoning until </think>.
  const request = { model, messages: base.messages, max_tokens: 10, seed: 5, chat_template_kwargs: { open_think: true } };
  const r = await client.chat.completions.create(request);
  const reasoning = r.choices[0].message.reasoning_content;
  assert.equal(typeof reasoning, 'string');
  assert.ok(reasoning.length > 0);
  assert.equal(r.choices[0].message.content, '');
  let streamed = '';
  for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
    for (const c of chunk.choices) {
      streamed += c.delta.reasoning_content ?? '';
      assert.ok(!c.delta.content, 'no content while thinking');
    }
  }
  assert.equal(streamed, reasoning);
  // enable_thinking false closed the block in the prompt: all content.
  const plain = await client.chat.completions.create({ ...request, chat_template_kwargs: { enable_thinking: false } });
  assert.equal(plain.choices[0].message.reasoning_content, null);
  assert.ok(plain.choices[0].message.content.length > 0);
});

console.log(`${checks} checks passed`);
