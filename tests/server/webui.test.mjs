// The chat page of `tessera serve` in Chromium (playwright-core over Debian's
// /usr/bin/chromium; no browser is downloaded): a streamed reply, Markdown, conversations,
// the stop button, the API key prompt, a wrong key, a server that went away, and a
// conversation longer than the model's context.
// Saves a screenshot to $TESSERA_TEST_OUT/webui.png.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import { outDir, sleep, startServer } from './server.mjs';

fs.mkdirSync(outDir, { recursive: true });

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const T = { timeout: 90000 };
const skip = fs.existsSync(CHROMIUM) ? false : `no ${CHROMIUM}`;

let browser;

async function openPage(server, { storage } = {}) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 820 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  if (storage) {
    await page.addInitScript((items) => {
      if (sessionStorage.getItem('seeded')) return;  // only on the first load
      sessionStorage.setItem('seeded', '1');
      for (const [k, v] of Object.entries(items)) localStorage.setItem(k, JSON.stringify(v));
    }, storage);
  }
  await page.goto(`${server.url}/`);
  return page;
}

async function closePage(page) {
  const errors = page.errors;
  await page.context().close();
  assert.deepEqual(errors, [], 'no uncaught errors in the page');
}

async function stopAndCheck(server) {
  if (!server) return;
  const r = await server.stop();
  assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null },
                   `${server.name}: exit status after SIGTERM (log: ${server.logFile})`);
}

async function setSetting(page, id, value) {
  if (!(await page.locator('#settings').evaluate((d) => d.open))) {
    await page.click('#settings summary');
  }
  await page.fill(`#${id}`, String(value));
}

const lastAssistant = (page) => page.locator('.msg.assistant').last();

describe('web page', { skip }, () => {
  let server;

  before(async () => {
    // Sequences longer than the model's 128 cells, so that a reply can run long enough
    // to be stopped.
    server = await startServer('webui', ['-np', '2', '--ctx-per-seq', '4096']);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 60000 });
  });
  after(async () => {
    await browser?.close();
    await stopAndCheck(server);
  });

  test('a message gets a streamed reply; the conversation is kept', T, async () => {
    const page = await openPage(server);
    await page.waitForSelector('#status[data-state="ok"]');
    await setSetting(page, 'max_tokens', 48);
    await setSetting(page, 'temperature', 0.8);
    await setSetting(page, 'top_k', 40);
    await setSetting(page, 'min_p', 0.05);
    await setSetting(page, 'system', 'You tell stories.');
    // Sampled at 0.8 with a random seed, the model may end at once; forbidding its end token
    // makes "several chunks" and "has text" certain (and exercises the extra-fields setting).
    await setSetting(page, 'extra', '{"ignore_eos": true}');
    const sent = page.waitForRequest((r) => r.url().endsWith('/v1/chat/completions'));
    await page.fill('#prompt', 'Once upon a time');
    await page.press('#prompt', 'Enter');
    const body = JSON.parse((await sent).postData());
    assert.deepEqual(body.messages, [{ role: 'system', content: 'You tell stories.' },
                                     { role: 'user', content: 'Once upon a time' }]);
    assert.equal(body.stream, true);
    assert.deepEqual([body.max_tokens, body.temperature, body.top_k, body.min_p], [48, 0.8, 40, 0.05]);
    assert.equal(body.ignore_eos, true, 'the extra fields are sent');
    await page.waitForSelector('.msg.assistant:not(.pending)', { timeout: 60000 });
    const reply = lastAssistant(page);
    assert.equal(await page.locator('.msg.user .content').textContent(), 'Once upon a time');
    const chunks = Number(await reply.getAttribute('data-chunks'));
    assert.ok(chunks >= 3, `the reply came in several SSE chunks (${chunks})`);
    const text = await reply.locator('.content').textContent();
    assert.ok(text.trim().length > 0, 'the reply has text');
    assert.equal(await reply.locator('.msg-error').isVisible(), false);
    assert.match(await reply.locator('.meta').textContent(), /tokens/);
    assert.equal(await page.locator('#error').isVisible(), false);

    // Kept in localStorage: after a reload the conversation is listed and shown.
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('tessera.conversations')));
    assert.equal(stored.length, 1);
    assert.deepEqual(stored[0].messages.map((m) => m.role), ['user', 'assistant']);
    assert.ok(stored[0].messages[1].content.trim().length > 0);
    await page.reload();
    await page.waitForSelector('.msg.assistant');
    assert.equal(await page.locator('#conv-list li').count(), 1);
    assert.equal(await page.locator('#conv-list li.active .conv-open').textContent(), 'Once upon a time');
    assert.equal(await lastAssistant(page).locator('.content').textContent(), text);
    assert.equal(await page.inputValue('#max_tokens'), '48', 'settings are kept');
    assert.equal(await page.inputValue('#system'), 'You tell stories.');
    await page.screenshot({ path: path.join(outDir, 'webui-chat.png') });
    await closePage(page);
  });

  test('Markdown of a stored reply; new, switch and delete conversations', T, async () => {
    const markdown = [
      '## A heading', '', 'Some **bold** and *italic* text with `inline code`.', '',
      '- first', '- second', '', '```js', 'const answer = 42;', 'if (a < b) return "<b>";', '```', '',
      'A [link](https://example.com) and <img src=x onerror="window.hacked=1">',
    ].join('\n');
    const conv = {
      id: 'md', title: 'Markdown', created: 1, updated: 2,
      messages: [{ role: 'user', content: 'Show me **markdown** <b>raw</b>' },
                 { role: 'assistant', content: markdown }],
    };
    const other = { id: 'other', title: 'Another chat', created: 0, updated: 1, messages: [] };
    const page = await openPage(server, {
      storage: { 'tessera.conversations': [conv, other], 'tessera.current': 'md' },
    });
    const content = lastAssistant(page).locator('.content');
    await content.waitFor();
    assert.equal(await content.locator('h2').textContent(), 'A heading');
    assert.equal(await content.locator('strong').textContent(), 'bold');
    assert.equal(await content.locator('em').textContent(), 'italic');
    assert.equal(await content.locator('p > code').textContent(), 'inline code');
    assert.equal(await content.locator('ul > li').count(), 2);
    assert.equal(await content.locator('pre > code.language-js').textContent(),
                 'const answer = 42;\nif (a < b) return "<b>";');
    assert.equal(await content.locator('a').getAttribute('href'), 'https://example.com');
    assert.equal(await content.locator('img').count(), 0, 'raw HTML is shown as text');
    assert.match(await content.textContent(), /<img src=x/);
    assert.equal(await page.evaluate(() => window.hacked), undefined);
    // The user's text is shown as typed, not rendered.
    assert.equal(await page.locator('.msg.user .content').textContent(), 'Show me **markdown** <b>raw</b>');
    assert.equal(await page.locator('.msg.user .content b').count(), 0);
    await page.screenshot({ path: path.join(outDir, 'webui.png') });

    // New chat, switch back, delete.
    await page.click('#new-chat');
    assert.equal(await page.locator('#conv-list li').count(), 3);
    assert.equal(await page.locator('.msg').count(), 0);
    await page.locator('#conv-list li', { hasText: 'Markdown' }).locator('.conv-open').click();
    assert.equal(await page.locator('.msg').count(), 2);
    await page.locator('#conv-list li', { hasText: 'Another chat' }).locator('.conv-delete').click();
    assert.equal(await page.locator('#conv-list li').count(), 2);
    const ids = await page.evaluate(() =>
      JSON.parse(localStorage.getItem('tessera.conversations')).map((c) => c.id));
    assert.equal(ids.length, 2);
    assert.ok(ids.includes('md') && !ids.includes('other'));
    await closePage(page);
  });

  test('the stop button ends a long reply', T, async () => {
    const page = await openPage(server);
    await page.waitForSelector('#status[data-state="ok"]');
    await setSetting(page, 'max_tokens', 4000);
    await setSetting(page, 'extra', '{"ignore_eos": true}');
    await page.fill('#prompt', 'Tell me a long story');
    await page.click('#send');
    await page.waitForFunction(() => {
      const m = [...document.querySelectorAll('.msg.assistant')].pop();
      return m && Number(m.dataset.chunks) >= 2;
    });
    assert.equal(await page.locator('#stop').isVisible(), true);
    await page.click('#stop');
    await page.waitForSelector('.msg.assistant.stopped');
    assert.equal(await page.locator('#send').isVisible(), true);
    assert.equal(await page.locator('#stop').isVisible(), false);
    const reply = lastAssistant(page);
    const chunks = Number(await reply.getAttribute('data-chunks'));
    assert.ok(chunks < 4000, `stopped before the end (${chunks} chunks)`);
    await sleep(300);
    assert.equal(Number(await reply.getAttribute('data-chunks')), chunks, 'no chunks after stop');
    assert.match(await reply.locator('.meta').textContent(), /stopped/);
    assert.equal(await page.locator('#error').isVisible(), false);
    // The server is free again: the next message gets a whole reply.
    await setSetting(page, 'max_tokens', 16);
    await setSetting(page, 'extra', '');
    await page.fill('#prompt', 'Once upon a time');
    await page.click('#send');
    await page.waitForFunction(() => {
      const m = [...document.querySelectorAll('.msg.assistant')];
      return m.length === 2 && !m[1].classList.contains('pending');
    }, null, { timeout: 60000 });
    assert.equal(await lastAssistant(page).evaluate((m) => m.classList.contains('stopped')), false);
    await closePage(page);
  });

  test('a server error (400) is shown with its message', T, async () => {
    const page = await openPage(server);
    await page.waitForSelector('#status[data-state="ok"]');
    await setSetting(page, 'extra', '{"temperature": "hot"}');
    await page.fill('#prompt', 'hello');
    await page.click('#send');
    await page.waitForSelector('#error:not([hidden])');
    const banner = await page.locator('#error-text').textContent();
    assert.match(banner, /400/);
    assert.match(banner, /temperature/);
    assert.match(await lastAssistant(page).locator('.msg-error').textContent(), /temperature/);
    await closePage(page);
  });
});

describe('web page with a small context', { skip }, () => {
  let server;

  before(async () => {
    // stories260K's own context (a few hundred cells): a long conversation cannot fit.
    server = await startServer('webui-ctx', ['-np', '1']);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 60000 });
  });
  after(async () => {
    await browser?.close();
    await stopAndCheck(server);
  });

  test('a conversation longer than the context goes on; the left-out turns are shown', T, async () => {
    const props = await (await fetch(`${server.url}/props`)).json();
    const nCtx = props.default_generation_settings.n_ctx;
    const story = 'Once upon a time there was a little cat called Tom. Tom liked to play with his ball. ';
    const messages = [];
    for (let i = 0; i < 6; i++) {
      messages.push({ role: 'user', content: `Tell me story number ${i}.` });
      messages.push({ role: 'assistant', content: story.repeat(3) });
    }
    const conv = { id: 'long', title: 'Long', created: 1, updated: 2, messages };
    const page = await openPage(server, {
      storage: { 'tessera.conversations': [conv], 'tessera.current': 'long' },
    });
    await page.waitForSelector('#status[data-state="ok"]');
    await page.waitForFunction(() => window.tessera.state.nCtx > 0);
    await setSetting(page, 'max_tokens', 4000);
    const sent = page.waitForRequest((r) => r.url().endsWith('/v1/chat/completions'));
    await page.fill('#prompt', 'And one more?');
    await page.press('#prompt', 'Enter');
    const body = JSON.parse((await sent).postData());
    assert.equal(body.max_tokens, nCtx - 1, 'the token limit is sized to the context');
    assert.equal(body.messages.length, 13, 'the whole conversation is sent');
    // The new reply (the 7th) has ended; the stored ones were never pending.
    await page.waitForFunction(() => {
      const m = [...document.querySelectorAll('.msg.assistant')];
      return m.length === 7 && !m[6].classList.contains('pending');
    }, null, { timeout: 60000 });
    const reply = lastAssistant(page);
    assert.equal(await reply.locator('.msg-error').isVisible(), false);
    assert.equal(await page.locator('#error').isVisible(), false);
    assert.match(await reply.locator('.meta').textContent(),
                 new RegExp(`older messages left out to fit the ${nCtx}-token context`));
    const dropped = await page.evaluate(() =>
      JSON.parse(localStorage.getItem('tessera.conversations'))[0].messages.at(-1).dropped);
    assert.ok(dropped > 0 && dropped % 2 === 0, `whole turns were left out (${dropped})`);
    assert.equal(await page.locator('.msg.left-out').count(), dropped);
    assert.equal(await page.locator('.msg').first().evaluate((m) => m.classList.contains('left-out')), true);
    const question = page.locator('.msg.user').last();
    assert.equal(await question.evaluate((m) => m.classList.contains('left-out')), false);
    await page.screenshot({ path: path.join(outDir, 'webui-context.png') });
    await closePage(page);
  });
});

describe('web page with --api-key', { skip }, () => {
  const KEY = 'webui-test-key';
  let server;

  before(async () => {
    server = await startServer('webui-key', ['--api-key', KEY]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 60000 });
  });
  after(async () => {
    await browser?.close();
    await stopAndCheck(server);
  });

  test('asks for the key; a wrong key is an error; the right one works; then the server goes', T, async () => {
    const page = await openPage(server);
    await page.waitForSelector('#key-dialog[open]');
    await page.fill('#key-input', 'not-the-key');
    await page.click('#key-save');
    await page.waitForSelector('#key-error:not([hidden])');
    assert.match(await page.locator('#key-error').textContent(), /wrong api key/i);
    await page.screenshot({ path: path.join(outDir, 'webui-key.png') });
    assert.equal(await page.locator('#key-dialog').evaluate((d) => d.open), true);

    await page.fill('#key-input', KEY);
    await page.click('#key-save');
    await page.waitForSelector('#key-dialog:not([open])', { state: 'attached' });
    assert.equal(await page.evaluate(() => JSON.parse(localStorage.getItem('tessera.apiKey'))), KEY);
    await setSetting(page, 'max_tokens', 16);
    await setSetting(page, 'extra', '{"ignore_eos": true}');  // (as above: the reply is never empty)
    await page.fill('#prompt', 'Once upon a time');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant:not(.pending)', { timeout: 60000 });
    assert.equal(await lastAssistant(page).locator('.msg-error').isVisible(), false);
    assert.ok(Number(await lastAssistant(page).getAttribute('data-chunks')) >= 2);

    // The server goes away: sending shows that it cannot be reached.
    await stopAndCheck(server);
    await page.fill('#prompt', 'are you there?');
    await page.click('#send');
    await page.waitForSelector('#error:not([hidden])');
    assert.match(await page.locator('#error-text').textContent(), /cannot reach the server/i);
    await page.waitForSelector('#status[data-state="down"]');
    assert.match(await page.locator('#status-text').textContent(), /unreachable/);
    await page.screenshot({ path: path.join(outDir, 'webui-gone.png') });
    await closePage(page);
  });
});
