// End-to-end checks of a live `dq4 serve` through the official OpenAI client (pinned in
// package.json): node openai_server_test.mjs BASE_URL MODEL API_KEY. Exits non-zero on the first
// failed check; prints the number of checks passed.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const [url, model, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 60000 });
let checks = 0;
const check = (name, f) => f().then(() => { checks++; }, (e) => { e.message = `${name}: ${e.message}`; throw e; });

async function tokenize(body) {
  const r = await fetch(`${url}/tokenize`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200);
  return (await r.json()).count;
}

// Gathers a streamed completion: text per choice index, finish reasons, usage, logprobs tokens.
async function collect(stream, chat) {
  const out = { text: {}, finish: {}, usage: null, chunks: 0, tokens: {} };
  for await (const chunk of stream) {
    out.chunks++;
    if (chunk.usage) out.usage = chunk.usage;
    for (const c of chunk.choices) {
      const piece = chat ? (c.delta.content ?? '') : c.text;
      out.text[c.index] = (out.text[c.index] ?? '') + piece;
      if (c.finish_reason) out.finish[c.index] = c.finish_reason;
      const lp = chat ? c.logprobs?.content?.length : c.logprobs?.tokens?.length;
      if (lp) out.tokens[c.index] = (out.tokens[c.index] ?? 0) + lp;
    }
  }
  return out;
}

const prompt = 'Once upon a time, there was a little';
const greedy = { model, prompt, max_tokens: 40, temperature: 0 };
let base;

await check('completion', async () => {
  base = await client.completions.create(greedy);
  assert.equal(base.object, 'text_completion');
  assert.equal(base.model, model);
  assert.equal(base.choices.length, 1);
  const c = base.choices[0];
  assert.equal(c.index, 0);
  assert.ok(c.text.length > 0);
  assert.ok(['stop', 'length'].includes(c.finish_reason));
  assert.equal(base.usage.prompt_tokens, await tokenize({ prompt }));
  assert.ok(base.usage.completion_tokens > 0 && base.usage.completion_tokens <= 40);
  assert.equal(base.usage.total_tokens, base.usage.prompt_tokens + base.usage.completion_tokens);
  if (c.finish_reason === 'length') assert.equal(base.usage.completion_tokens, 40);
});

await check('streamed completion equals the non-streamed one', async () => {
  const s = await collect(await client.completions.create({ ...greedy, stream: true, stream_options: { include_usage: true } }), false);
  assert.equal(s.text[0], base.choices[0].text);
  assert.equal(s.finish[0], base.choices[0].finish_reason);
  assert.equal(s.usage.prompt_tokens, base.usage.prompt_tokens);
  assert.equal(s.usage.completion_tokens, base.usage.completion_tokens);
  assert.ok(s.chunks > 2);
  const plain = await collect(await client.completions.create({ ...greedy, stream: true }), false);
  assert.equal(plain.usage, null);
  assert.equal(plain.text[0], base.choices[0].text);
});

await check('stop strings', async () => {
  const text = base.choices[0].text;
  assert.ok(text.length > 12, text);
  const stop = text.slice(6, 9);
  const cut = text.slice(0, text.indexOf(stop));
  const r = await client.completions.create({ ...greedy, stop: [stop, 'zzzzqqq'] });
  assert.equal(r.choices[0].text, cut);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await collect(await client.completions.create({ ...greedy, stop, stream: true }), false);
  assert.equal(s.text[0], cut);
  assert.equal(s.finish[0], 'stop');
});

await check('seeds reproduce, n > 1', async () => {
  const sampled = { model, prompt, max_tokens: 30, temperature: 1.0, seed: 1234, n: 3 };
  const a = await client.completions.create(sampled);
  const b = await client.completions.create(sampled);
  assert.equal(a.choices.length, 3);
  assert.deepEqual(a.choices.map((c) => c.index), [0, 1, 2]);
  assert.deepEqual(a.choices.map((c) => c.text), b.choices.map((c) => c.text));
  assert.ok(new Set(a.choices.map((c) => c.text)).size > 1, 'the three choices are all equal');
  assert.equal(a.usage.completion_tokens, b.usage.completion_tokens);
  const s = await collect(await client.completions.create({ ...sampled, stream: true }), false);
  assert.deepEqual([0, 1, 2].map((i) => s.text[i]), a.choices.map((c) => c.text));
  const other = await client.completions.create({ ...sampled, seed: 99 });
  assert.notDeepEqual(other.choices.map((c) => c.text), a.choices.map((c) => c.text));
});

await check('completion logprobs', async () => {
  const r = await client.completions.create({ ...greedy, logprobs: 3 });
  const lp = r.choices[0].logprobs;
  assert.equal(r.choices[0].text, base.choices[0].text);
  assert.equal(lp.tokens.length, r.usage.completion_tokens);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  assert.equal(lp.text_offset.length, lp.tokens.length);
  for (let i = 0; i < lp.tokens.length; i++) {
    assert.ok(lp.token_logprobs[i] <= 0);
    const top = Object.values(lp.top_logprobs[i]);
    assert.ok(top.length >= 1 && top.length <= 4);
    assert.ok(Math.abs(Math.max(...top) - lp.token_logprobs[i]) < 1e-4, 'greedy picks the top token');
  }
  const s = await collect(await client.completions.create({ ...greedy, logprobs: 2, stream: true }), false);
  assert.equal(s.tokens[0], r.usage.completion_tokens);
});

const messages = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a cat.' }];
await check('chat', async () => {
  const chat = { model, messages, max_tokens: 30, temperature: 0 };
  const r = await client.chat.completions.create(chat);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.usage.prompt_tokens, await tokenize({ messages }));
  const s = await collect(await client.chat.completions.create({ ...chat, stream: true, stream_options: { include_usage: true } }), true);
  assert.equal(s.text[0], r.choices[0].message.content);
  assert.equal(s.usage.completion_tokens, r.usage.completion_tokens);
  const lp = await client.chat.completions.create({ ...chat, logprobs: true, top_logprobs: 2 });
  assert.equal(lp.choices[0].message.content, r.choices[0].message.content);
  assert.equal(lp.choices[0].logprobs.content.length, lp.usage.completion_tokens);
  for (const t of lp.choices[0].logprobs.content) {
    assert.equal(t.top_logprobs.length, 2);
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4);
    assert.deepEqual(t.bytes, [...Buffer.from(t.token, 'utf8')]);
  }
  const capped = await client.chat.completions.create({ model, messages, max_completion_tokens: 7, temperature: 0 });
  assert.ok(r.usage.completion_tokens > 7, 'the uncapped reply is longer than the cap');
  assert.equal(capped.usage.completion_tokens, 7);
  assert.equal(capped.choices[0].finish_reason, 'length');
  assert.ok(r.choices[0].message.content.startsWith(capped.choices[0].message.content));
  const sampled = { model, messages, max_tokens: 12, temperature: 1, seed: 11, n: 2 };
  const a = await client.chat.completions.create(sampled);
  const b = await client.chat.completions.create(sampled);
  assert.equal(a.choices.length, 2);
  assert.deepEqual(a.choices.map((c) => c.message.content), b.choices.map((c) => c.message.content));
  assert.equal(a.usage.completion_tokens, b.usage.completion_tokens);
  const parts = await client.chat.completions.create({
    ...chat, messages: [messages[0], { role: 'user', content: [{ type: 'text', text: 'Tell me about' }, { type: 'text', text: 'a cat.' }] }],
  });
  assert.equal(parts.usage.prompt_tokens, await tokenize({ messages: [messages[0], { role: 'user', content: 'Tell me about\na cat.' }] }));
});

await check('tools reach the chat template', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }];
  const withTools = await client.chat.completions.create({ model, messages, tools, max_tokens: 5, temperature: 0 });
  assert.equal(withTools.usage.prompt_tokens, await tokenize({ messages, tools }));
  assert.ok(withTools.usage.prompt_tokens > await tokenize({ messages }));
});

await check('errors as OpenAI error objects', async () => {
  await assert.rejects(client.completions.create({ ...greedy, model: 'no-such-model' }),
    (e) => e.status === 404 && e.code === 'model_not_found');
  await assert.rejects(client.completions.create({ ...greedy, temperature: 'hot' }),
    (e) => e.status === 400 && e.param === 'temperature' && e.type === 'invalid_request_error');
  await assert.rejects(client.completions.create({ ...greedy, max_tokens: 100000 }),
    (e) => e.status === 400 && /maximum context length/.test(e.message));
  const bad = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e.status === 401);
});

await check('chat.completions.parse with a JSON schema', async () => {
  const schema = {
    type: 'object',
    properties: { animal: { type: 'string', enum: ['cat', 'dog', 'bird'] },
                  legs: { type: 'integer', minimum: 0, maximum: 8 } },
    required: ['animal', 'legs'], additionalProperties: false,
  };
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.parse({
      model, messages: [{ role: 'user', content: 'An animal, please.' }], max_tokens: 100, seed,
      response_format: { type: 'json_schema', json_schema: { name: 'animal', strict: true, schema } },
    });
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.deepEqual(Object.keys(m.parsed), ['animal', 'legs']);
    assert.ok(['cat', 'dog', 'bird'].includes(m.parsed.animal));
    assert.ok(Number.isInteger(m.parsed.legs) && m.parsed.legs >= 0 && m.parsed.legs <= 8);
  }
  await assert.rejects(client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hi' }],
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', not: {} } } },
  }), (e) => e.status === 400 && e.param === 'response_format.json_schema.schema' && /'not'/.test(e.message));
});

await check('models', async () => {
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [model]);
});

console.log(`openai client: ${checks} checks passed`);
