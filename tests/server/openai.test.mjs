// `tessera serve` against the official openai SDK: each endpoint through the client, the
// shapes of the answers, and the SDK's exception types for our 400/401/404/429.
// Run: TESSERA_BIN=build/tessera node --test openai.test.mjs
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { sleep, startServer } from './server.mjs';

const T = { timeout: 60000 };
const PROMPT = 'Once upon a time, there was a little girl named Lily.';

function clientFor(server, apiKey = 'unused') {
  return new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0, timeout: 60000 });
}

// Asserts that `promise` rejects with the SDK class `type` and HTTP `status`; returns it.
async function rejectsWith(promise, type, status) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof type, `expected ${type.name}, got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.status, status);
    assert.equal(typeof e.error?.message, 'string', 'the error body has error.message');
    assert.ok(e.error.message.length > 0);
    assert.ok('type' in e.error && 'param' in e.error && 'code' in e.error,
              `error has type, param, code: ${JSON.stringify(e.error)}`);
    return e;
  }
  assert.fail(`expected ${type.name} (${status}), the request succeeded`);
}

async function stopAndCheck(server) {
  if (!server) return;
  const r = await server.stop();
  assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null },
                   `${server.name}: exit status after SIGTERM (log: ${server.logFile})`);
}

describe('generation', () => {
  let server;
  let client;
  let model;

  before(async () => {
    // Sequences of 512 cells (the model was trained on 128): room for the chat template,
    // a prompt and a JSON document.
    server = await startServer('main', ['-np', '2', '--ctx-per-seq', '512']);
    client = clientFor(server);
  });
  after(() => stopAndCheck(server));

  test('models list', T, async () => {
    const list = await client.models.list();
    assert.ok(list.data.length >= 1, 'at least one model');
    for (const m of list.data) {
      assert.equal(typeof m.id, 'string');
      assert.equal(m.object, 'model');
    }
    model = list.data[0].id;
    const one = await client.models.retrieve(model);
    assert.equal(one.id, model);
    assert.equal(one.object, 'model');
    await rejectsWith(client.models.retrieve('no-such-model'), OpenAI.NotFoundError, 404);
  });

  test('chat, not streamed', T, async () => {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: PROMPT }], max_tokens: 16, temperature: 0,
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(typeof r.id, 'string');
    assert.equal(typeof r.created, 'number');
    assert.equal(r.model, model);
    assert.equal(r.choices.length, 1);
    const [c] = r.choices;
    assert.equal(c.index, 0);
    assert.equal(c.message.role, 'assistant');
    assert.equal(typeof c.message.content, 'string');
    assert.ok(['stop', 'length'].includes(c.finish_reason), c.finish_reason);
    assert.ok(r.usage.prompt_tokens > 0);
    assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 16);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  });

  test('chat, streamed, equals the same request not streamed (greedy)', T, async () => {
    const request = {
      model, messages: [{ role: 'user', content: PROMPT }], max_tokens: 24, temperature: 0,
    };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({
      ...request, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let role = null;
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      chunks++;
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;  // the usage chunk has no choices
      if (choice.delta.role) role = choice.delta.role;
      text += choice.delta.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    assert.equal(role, 'assistant', 'a chunk gives the role');
    assert.ok(chunks >= 3, `several chunks (${chunks})`);
    assert.equal(finish, whole.choices[0].finish_reason);
    assert.equal(text, whole.choices[0].message.content);
    assert.ok(usage, 'stream_options.include_usage gives a usage chunk');
    assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
  });

  test('completions, not streamed and streamed', T, async () => {
    const r = await client.completions.create({ model, prompt: PROMPT, max_tokens: 12, temperature: 0 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.choices.length, 1);
    assert.equal(typeof r.choices[0].text, 'string');
    assert.ok(r.choices[0].text.length > 0);
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 12);

    const stream = await client.completions.create({
      model, prompt: PROMPT, max_tokens: 12, temperature: 0, stream: true,
    });
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.text ?? '';
    }
    assert.ok(chunks >= 2, `several chunks (${chunks})`);
    assert.equal(text, r.choices[0].text);
  });

  test('chat with several choices (n = 2)', T, async () => {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: PROMPT }], max_tokens: 8, n: 2, seed: 7,
    });
    assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1]);
  });

  test('logprobs and top_logprobs', T, async () => {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: PROMPT }], max_tokens: 8, temperature: 0,
      logprobs: true, top_logprobs: 3,
    });
    const { content } = r.choices[0].logprobs;
    assert.ok(Array.isArray(content) && content.length > 0, 'logprobs.content is a list');
    assert.equal(content.length, r.usage.completion_tokens);
    assert.equal(content.map((t) => t.token).join(''), r.choices[0].message.content);
    for (const t of content) {
      assert.equal(typeof t.token, 'string');
      assert.ok(typeof t.logprob === 'number' && t.logprob <= 0, `logprob ${t.logprob}`);
      assert.ok(t.bytes === null || Array.isArray(t.bytes));
      assert.equal(t.top_logprobs.length, 3);
      for (const alt of t.top_logprobs) {
        assert.equal(typeof alt.token, 'string');
        assert.ok(alt.logprob <= 0);
      }
      const lps = t.top_logprobs.map((a) => a.logprob);
      assert.deepEqual(lps, [...lps].sort((a, b) => b - a), 'top_logprobs most likely first');
      // Greedy: the chosen token is the most likely one.
      assert.ok(Math.abs(t.logprob - lps[0]) < 1e-4, `${t.logprob} vs ${lps[0]}`);
    }
  });

  test('response_format json_schema', T, async () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 12 },
        age: { type: 'integer' },
        happy: { type: 'boolean' },
      },
      required: ['name', 'age', 'happy'],
      additionalProperties: false,
    };
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Describe Lily as JSON.' }], max_tokens: 200,
      temperature: 0.7, seed: 1,
      response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema } },
    });
    const text = r.choices[0].message.content;
    assert.equal(r.choices[0].finish_reason, 'stop', `finished by the grammar: ${text}`);
    const value = JSON.parse(text);
    assert.deepEqual(Object.keys(value).sort(), ['age', 'happy', 'name']);
    assert.equal(typeof value.name, 'string');
    assert.ok(value.name.length <= 12);
    assert.ok(Number.isInteger(value.age));
    assert.equal(typeof value.happy, 'boolean');
  });

  test('400 BadRequestError: an invalid field names it', T, async () => {
    const e = await rejectsWith(
      client.chat.completions.create({ model, messages: [], max_tokens: 4 }),
      OpenAI.BadRequestError, 400);
    assert.equal(e.param, 'messages');
    assert.equal(e.type, 'invalid_request_error');
    await rejectsWith(
      client.chat.completions.create({
        model, messages: [{ role: 'user', content: 'hi' }], temperature: 'hot',
      }),
      OpenAI.BadRequestError, 400);
    // Not JSON at all (plain fetch: the SDK always sends JSON).
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"messages": [',
    });
    assert.equal(res.status, 400);
    assert.equal(typeof (await res.json()).error.message, 'string');
  });

  test('an unknown model in a request is ignored; 404 NotFoundError: an unknown route', T, async () => {
    const r = await client.chat.completions.create({
      model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4,
    });
    assert.equal(r.object, 'chat.completion');
    const res = await fetch(`${server.url}/v1/no-such-endpoint`);
    assert.equal(res.status, 404);
    assert.equal(typeof (await res.json()).error.message, 'string');
  });

  test('the web page is served', T, async () => {
    const page = await fetch(`${server.url}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type'), /^text\/html/);
    assert.match(await page.text(), /<script src="app.js">/);
    for (const [file, type] of [['app.js', /javascript/], ['markdown.js', /javascript/],
                                ['style.css', /^text\/css/], ['index.html', /^text\/html/]]) {
      const res = await fetch(`${server.url}/${file}`);
      assert.equal(res.status, 200, file);
      assert.match(res.headers.get('content-type'), type, file);
    }
  });
});

describe('embeddings (--embeddings)', () => {
  let server;
  let client;

  before(async () => {
    server = await startServer('embeddings', ['--embeddings']);
    client = clientFor(server);
  });
  after(() => stopAndCheck(server));

  test('float and base64 (the SDK default) give the same vectors', T, async () => {
    const model = (await client.models.list()).data[0].id;
    const input = ['Lily went to the park.', 'A big red ball.'];
    const floats = await client.embeddings.create({ model, input, encoding_format: 'float' });
    assert.equal(floats.object, 'list');
    assert.equal(floats.data.length, 2);
    floats.data.forEach((d, i) => {
      assert.equal(d.object, 'embedding');
      assert.equal(d.index, i);
      assert.ok(Array.isArray(d.embedding) && d.embedding.length > 0);
      assert.ok(d.embedding.every(Number.isFinite));
    });
    assert.equal(floats.data[0].embedding.length, floats.data[1].embedding.length);
    assert.ok(floats.usage.prompt_tokens > 0);

    const decoded = await client.embeddings.create({ model, input });  // base64 on the wire
    decoded.data.forEach((d, i) => {
      assert.equal(d.embedding.length, floats.data[i].embedding.length);
      d.embedding.forEach((x, k) => assert.ok(Math.abs(x - floats.data[i].embedding[k]) < 1e-6));
    });
  });

  test('one string input', T, async () => {
    const model = (await client.models.list()).data[0].id;
    const r = await client.embeddings.create({ model, input: 'hello', encoding_format: 'float' });
    assert.equal(r.data.length, 1);
  });
});

describe('API key (--api-key)', () => {
  const KEY = 'tessera-test-key';
  let server;

  before(async () => {
    server = await startServer('api-key', ['--api-key', KEY]);
  });
  after(() => stopAndCheck(server));

  test('401 AuthenticationError without the right key; the right key works', T, async () => {
    const wrong = clientFor(server, 'wrong-key');
    await rejectsWith(wrong.models.list(), OpenAI.AuthenticationError, 401);
    await rejectsWith(
      wrong.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
      OpenAI.AuthenticationError, 401);
    const bare = await fetch(`${server.url}/v1/models`);
    assert.equal(bare.status, 401);
    assert.equal(typeof (await bare.json()).error.message, 'string');

    const right = clientFor(server, KEY);
    const list = await right.models.list();
    const r = await right.chat.completions.create({
      model: list.data[0].id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4,
    });
    assert.equal(r.choices.length, 1);
  });

  test('/health and the page need no key', T, async () => {
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    assert.equal((await fetch(`${server.url}/`)).status, 200);
  });
});

describe('queue limit (-np 1 --max-queue 1)', () => {
  let server;

  before(async () => {
    server = await startServer('queue', ['-np', '1', '--max-queue', '1', '--ctx-per-seq', '4096']);
  });
  after(() => stopAndCheck(server));

  test('429 RateLimitError for a request beyond the queue', T, async () => {
    const client = clientFor(server);
    const model = (await client.models.list()).data[0].id;
    // Nearly as many tokens as a sequence holds (1.5 s in a release build): the first
    // request keeps the only slot busy while the other two arrive.
    const long = (content) => ({
      model, messages: [{ role: 'user', content }], max_tokens: 3900, ignore_eos: true, stream: true,
    });
    const first = await client.chat.completions.create(long('one'));
    const firstIter = first[Symbol.asyncIterator]();
    await firstIter.next();  // it is generating: it holds the slot
    let firstDone = false;
    const firstRest = (async () => {
      let n = 0;
      for (let r = await firstIter.next(); !r.done; r = await firstIter.next()) n++;
      firstDone = true;
      return n;
    })();
    // The second waits in the queue (its answer comes when the slot frees).
    const second = client.chat.completions.create(long('two'));
    second.catch(() => {});
    await sleep(150);
    const e = await rejectsWith(
      client.chat.completions.create({ ...long('three'), stream: false, max_tokens: 4 }),
      OpenAI.RateLimitError, 429);
    assert.ok(!firstDone, 'the first request was still generating when the third was refused ' +
                          '(else this test did not test the queue)');
    assert.ok(e.error.message.length > 0);
    first.controller.abort();  // frees the slot for the second
    await firstRest.catch(() => {});
    const secondStream = await second;
    secondStream.controller.abort();
    // The server takes requests again.
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4,
    });
    assert.equal(r.choices.length, 1);
  });
});
