// Tool calls and reasoning through the official openai SDK, on the tiny shared model with
// real chat templates (../shared/templates, given with --chat-template-file): forced calls
// whose arguments validate against the tool's schema (ajv), plain and streamed; two
// parallel calls; a tool result going back in through a Qwen-style and a Llama-3-style
// template; tool_choice "none"; reasoning split off a reply that opens with <think>.
// Run: TESSERA_BIN=build/tessera node --test tools.test.mjs
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { sharedDir, startServer } from './server.mjs';

const T = { timeout: 90000 };
const templates = path.join(sharedDir, 'templates');
const QWEN = path.join(templates, 'Qwen-Qwen2.5-7B-Instruct.jinja');
const LLAMA3 = path.join(templates, 'meta-llama-Llama-3.1-8B-Instruct.jinja');
const QWEN3 = path.join(templates, 'Qwen-Qwen3.jinja');
const GEMMA = path.join(templates, 'google-gemma-2-2b-it.jinja');

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', minLength: 1, maxLength: 12 },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer', minimum: 1, maximum: 7 },
      },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const TIME = {
  type: 'function',
  function: {
    name: 'get_time',
    description: 'Get the time in a timezone',
    parameters: {
      type: 'object',
      properties: { zone: { type: 'string', pattern: '^[A-Z][a-z]{1,8}/[A-Z][a-z]{1,8}$' } },
      required: ['zone'],
    },
  },
};
const ajv = new Ajv({ strict: false });
const validators = {
  get_weather: ajv.compile(WEATHER.function.parameters),
  get_time: ajv.compile(TIME.function.parameters),
};

function clientFor(server) {
  return new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 90000 });
}

function checkCall(call, name) {
  assert.equal(call.type, 'function');
  assert.equal(typeof call.id, 'string');
  assert.ok(call.id.length > 0);
  if (name) assert.equal(call.function.name, name);
  assert.ok(call.function.name in validators, `a known tool: ${call.function.name}`);
  assert.equal(typeof call.function.arguments, 'string', 'arguments are a JSON text');
  const args = JSON.parse(call.function.arguments);
  const validate = validators[call.function.name];
  assert.ok(validate(args), `${call.function.arguments}: ${JSON.stringify(validate.errors)}`);
  return args;
}

// The deltas of a streamed reply assembled as the SDK's users assemble them.
async function assemble(stream) {
  const calls = [];
  let content = '';
  let reasoning = '';
  let finish = null;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      const d = choice.delta ?? {};
      if (d.content) content += d.content;
      if (d.reasoning_content) reasoning += d.reasoning_content;
      for (const tc of d.tool_calls ?? []) {
        calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        const c = calls[tc.index];
        if (tc.id) c.id = tc.id;
        if (tc.type) c.type = tc.type;
        if (tc.function?.name) c.function.name += tc.function.name;
        if (tc.function?.arguments) c.function.arguments += tc.function.arguments;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { calls, content, reasoning, finish };
}

const USER = [{ role: 'user', content: 'What is the weather in Paris?' }];

for (const [label, file] of [['Qwen-style', QWEN], ['Llama-3-style', LLAMA3]]) {
  describe(`tool calls, ${label} template`, { skip: !fs.existsSync(file) && `absent: ${file}` }, () => {
    let server;
    let client;
    before(async () => {
      server = await startServer(`tools-${label}`, ['-np', '2', '--ctx-per-seq', '2048', '--chat-template-file', file]);
      client = clientFor(server);
    });
    after(async () => {
      const r = await server?.stop();
      if (r) assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null });
    });

    test('tool_choice required: a call whose arguments validate', T, async () => {
      const r = await client.chat.completions.create({
        model: 'm', messages: USER, tools: [WEATHER, TIME], tool_choice: 'required', seed: 1, max_tokens: 300,
      });
      const m = r.choices[0].message;
      assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(r.choices[0]));
      assert.ok(m.tool_calls?.length >= 1);
      for (const c of m.tool_calls) checkCall(c);
    });

    test('a named function, plain and streamed, gives the same kind of call', T, async () => {
      const req = {
        model: 'm', messages: USER, tools: [WEATHER, TIME], seed: 7, max_tokens: 300, temperature: 0,
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
      };
      const plain = await client.chat.completions.create(req);
      assert.equal(plain.choices[0].finish_reason, 'tool_calls');
      assert.equal(plain.choices[0].message.tool_calls.length, 1);
      const args = checkCall(plain.choices[0].message.tool_calls[0], 'get_weather');
      const streamed = await assemble(await client.chat.completions.create({ ...req, stream: true }));
      assert.equal(streamed.finish, 'tool_calls');
      assert.equal(streamed.calls.length, 1);
      // Greedy: the streamed call is the same call, its arguments assembled from deltas.
      assert.deepEqual(checkCall(streamed.calls[0], 'get_weather'), args);
    });

    test('parallel_tool_calls with two tools', T, async () => {
      const r = await client.chat.completions.create({
        model: 'm', messages: [{ role: 'user', content: 'Weather in Paris and the time in Europe/Paris?' }],
        tools: [WEATHER, TIME], tool_choice: 'required', parallel_tool_calls: true, seed: 3, max_tokens: 600,
        // A high temperature makes the tiny model write more than one call now and then;
        // whatever it writes must be well-formed calls.
        temperature: 1.5,
      });
      const calls = r.choices[0].message.tool_calls;
      assert.ok(calls?.length >= 1);
      for (const c of calls) checkCall(c);
      assert.equal(new Set(calls.map((c) => c.id)).size, calls.length, 'call ids differ');
    });

    test('a tool result goes back in, then tool_choice none yields text', T, async () => {
      const first = await client.chat.completions.create({
        model: 'm', messages: USER, tools: [WEATHER], tool_choice: 'required', seed: 5, max_tokens: 300,
      });
      const msg = first.choices[0].message;
      const call = msg.tool_calls[0];
      checkCall(call, 'get_weather');
      const messages = [...USER, msg, { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' }];
      // The template renders the call and its result (apply-template shows the prompt).
      const shown = await fetch(`${server.url}/apply-template`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ messages, tools: [WEATHER] }),
      }).then((x) => x.json());
      assert.ok(shown.prompt.includes('get_weather'), shown.prompt);
      // The result as the template writes it (Llama 3.x quotes a string result as JSON).
      assert.ok(shown.prompt.includes('temperature') && shown.prompt.includes('21'), shown.prompt);
      assert.ok(shown.prompt.indexOf('get_weather', shown.prompt.indexOf(USER[0].content)) > 0,
                'the call is rendered after the question');
      const answer = await client.chat.completions.create({
        model: 'm', messages, tools: [WEATHER], tool_choice: 'none', seed: 5, max_tokens: 20,
      });
      const a = answer.choices[0];
      assert.equal(a.message.tool_calls ?? undefined, undefined);
      assert.equal(typeof a.message.content, 'string');
      assert.notEqual(a.finish_reason, 'tool_calls');
    });

    test('a tool that is not among the tools is a 400 naming tool_choice', T, async () => {
      await assert.rejects(
        client.chat.completions.create({
          model: 'm', messages: USER, tools: [WEATHER],
          tool_choice: { type: 'function', function: { name: 'nope' } },
        }),
        (e) => e instanceof OpenAI.BadRequestError && e.error?.param === 'tool_choice');
    });
  });
}

// Gemma's template shows no tools and refuses a system message: the generic format's
// instruction, with the tools, goes before the first user message.
describe('tool calls, a template without tools (Gemma 2)', { skip: !fs.existsSync(GEMMA) && `absent: ${GEMMA}` }, () => {
  let server;
  let client;
  before(async () => {
    server = await startServer('tools-gemma', ['-np', '1', '--ctx-per-seq', '2048', '--chat-template-file', GEMMA]);
    client = clientFor(server);
  });
  after(async () => {
    const r = await server?.stop();
    if (r) assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null });
  });

  test('the tools reach the prompt and a required call validates', T, async () => {
    const shown = await fetch(`${server.url}/apply-template`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: USER, tools: [WEATHER] }),
    }).then((x) => x.json());
    assert.ok(shown.prompt?.includes('"get_weather"') && shown.prompt.includes(USER[0].content), JSON.stringify(shown));
    const r = await client.chat.completions.create({
      model: 'm', messages: USER, tools: [WEATHER], tool_choice: 'required', seed: 2, max_tokens: 300,
    });
    assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(r.choices[0]));
    checkCall(r.choices[0].message.tool_calls[0], 'get_weather');
  });
});

describe('reasoning', { skip: !fs.existsSync(QWEN3) && `absent: ${QWEN3}` }, () => {
  let server;
  let client;
  before(async () => {
    server = await startServer('reasoning', ['-np', '1', '--ctx-per-seq', '1024', '--chat-template-file', QWEN3]);
    client = clientFor(server);
  });
  after(async () => {
    const r = await server?.stop();
    if (r) assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null });
  });

  // A grammar makes the tiny model write a thinking block, then an answer.
  const grammar = 'root ::= "<think>" [a-z ]{3,20} "</think>" [a-z ]{3,20}';

  test('<think> goes to reasoning_content, plain and streamed', T, async () => {
    const req = { model: 'm', messages: USER, grammar, seed: 2, temperature: 0, max_tokens: 100 };
    const plain = await client.chat.completions.create(req);
    const m = plain.choices[0].message;
    assert.ok(m.reasoning_content?.length >= 3, JSON.stringify(m));
    assert.ok(!m.content.includes('<think>') && !m.content.includes('</think>'), m.content);
    const streamed = await assemble(await client.chat.completions.create({ ...req, stream: true }));
    assert.equal(streamed.reasoning, m.reasoning_content);
    assert.equal(streamed.content, m.content);
  });

  test('reasoning_format none leaves it in the content', T, async () => {
    const r = await client.chat.completions.create({
      model: 'm', messages: USER, grammar, seed: 2, temperature: 0, max_tokens: 100, reasoning_format: 'none',
    });
    const m = r.choices[0].message;
    assert.ok(m.content.startsWith('<think>'), m.content);
    assert.equal(m.reasoning_content ?? undefined, undefined);
  });

  test('enable_thinking reaches the template', T, async () => {
    const shown = await fetch(`${server.url}/apply-template`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: USER, chat_template_kwargs: { enable_thinking: false } }),
    }).then((x) => x.json());
    assert.ok(shown.prompt.endsWith('<think>\n\n</think>\n\n'), JSON.stringify(shown.prompt));
  });
});
