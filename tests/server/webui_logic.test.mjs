// The page's pure logic under node, no server: the Markdown renderer (safe output) and
// the SSE parser (events split anywhere across chunks), sizing requests to the model's
// context and telling which messages the server left out.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from './server.mjs';

const require = createRequire(import.meta.url);
const webui = path.join(repoRoot, 'tools', 'server', 'webui');
const { renderMarkdown } = require(path.join(webui, 'markdown.js'));
const { SSEParser, contextSize, capMaxTokens, sentIndices, leftOutIndices, droppedNote } =
  require(path.join(webui, 'app.js'));

test('markdown: blocks', () => {
  assert.equal(renderMarkdown('# Title'), '<h1>Title</h1>');
  assert.equal(renderMarkdown('### Three ###'), '<h3>Three</h3>');
  assert.equal(renderMarkdown('one\ntwo\n\nthree'), '<p>one<br>two</p>\n<p>three</p>');
  assert.equal(renderMarkdown('```js\nlet a = "<b>";\n```'),
               '<pre><code class="language-js">let a = &quot;&lt;b&gt;&quot;;</code></pre>');
  assert.equal(renderMarkdown('```\nstill streaming <i>'), '<pre><code>still streaming &lt;i&gt;</code></pre>');
  assert.equal(renderMarkdown('- a\n- b\n  - c\n- d'),
               '<ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul>');
  assert.equal(renderMarkdown('1. x\n2. y'), '<ol><li>x</li><li>y</li></ol>');
  assert.equal(renderMarkdown('3. x'), '<ol start="3"><li>x</li></ol>');
  assert.equal(renderMarkdown('> quoted\n> text'), '<blockquote><p>quoted<br>text</p></blockquote>');
  assert.equal(renderMarkdown('a\n\n---\n\nb'), '<p>a</p>\n<hr>\n<p>b</p>');
  assert.equal(renderMarkdown('| a | b |\n|---|--:|\n| 1 | 2 |'),
               '<table><thead><tr><th>a</th><th style="text-align:right">b</th></tr></thead>' +
               '<tbody><tr><td>1</td><td style="text-align:right">2</td></tr></tbody></table>');
});

test('markdown: inline', () => {
  assert.equal(renderMarkdown('**b** *i* _j_ ***bi*** ~~s~~ `c*d*`'),
               '<p><strong>b</strong> <em>i</em> <em>j</em> <strong><em>bi</em></strong> ' +
               '<del>s</del> <code>c*d*</code></p>');
  assert.equal(renderMarkdown('snake_case_name and 2 * 3 * 4'), '<p>snake_case_name and 2 * 3 * 4</p>');
  assert.equal(renderMarkdown('\\*not em\\*'), '<p>*not em*</p>');
  assert.equal(renderMarkdown('[site](https://example.com/a?b=1&c=2)'),
               '<p><a href="https://example.com/a?b=1&amp;c=2" target="_blank" ' +
               'rel="noopener noreferrer">site</a></p>');
  assert.equal(renderMarkdown('go to https://example.com/x.'),
               '<p>go to <a href="https://example.com/x" target="_blank" ' +
               'rel="noopener noreferrer">https://example.com/x</a>.</p>');
});

const ALLOWED_TAGS = new Set(['p', 'br', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'strong', 'em', 'del',
  'code', 'pre', 'ul', 'ol', 'li', 'blockquote', 'hr', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'a']);

test('markdown: no markup from the input survives', () => {
  const hostile = [
    '<script>alert(1)</script>',
    '<img src=x onerror=alert(1)>',
    '[x](javascript:alert(1))',
    '[x](JaVaScRiPt:alert(1))',
    '[x](java\tscript:alert(1))',
    '[x](data:text/html,<b>)',
    '[x](vbscript:msgbox)',
    '[x](" onmouseover="alert(1))',
    '`<b>` **<i>** ```\n<svg onload=alert(1)>\n```',
    '| <b> | x |\n|---|---|\n| <i> | y |',
    '\u0000' + '0\u0000 [a](\u00000\u0000)',
    '# <h1>',
  ];
  for (const text of hostile) {
    const html = renderMarkdown(text);
    assert.doesNotMatch(html, /\u0000/, `${text} -> ${html}`);
    // Every tag is one the renderer writes, with only its attributes.
    for (const [, tag, attrs] of html.matchAll(/<\/?([a-zA-Z0-9]+)([^>]*)>/g)) {
      assert.ok(ALLOWED_TAGS.has(tag), `tag <${tag}> from ${text} -> ${html}`);
      assert.match(attrs, /^(\s+(href|target|rel|class|style|start)="[^"<>]*")*$/, `${text} -> ${html}`);
      for (const [, href] of attrs.matchAll(/href="([^"]*)"/g)) {
        assert.match(href, /^(https?:\/\/|mailto:|[^:]*$)/i, `${text} -> ${html}`);
      }
    }
  }
});

test('SSE: events split anywhere', () => {
  const wire = 'data: {"a":1}\n\n: comment\r\ndata: two\r\ndata: lines\r\n\r\n' +
               'event: x\nid: 3\ndata:{"b":2}\n\ndata: [DONE]\n\n';
  const expected = ['{"a":1}', 'two\nlines', '{"b":2}', '[DONE]'];
  for (let step = 1; step <= wire.length; step++) {
    const parser = new SSEParser();
    const got = [];
    for (let i = 0; i < wire.length; i += step) got.push(...parser.push(wire.slice(i, i + step)));
    got.push(...parser.finish());
    assert.deepEqual(got, expected, `chunks of ${step}`);
  }
  const parser = new SSEParser();
  assert.deepEqual([...parser.push('data: last'), ...parser.finish()], ['last']);
});

test('context: n_ctx from /props, the token limit capped by it', () => {
  assert.equal(contextSize({ default_generation_settings: { n_ctx: 256 }, n_ctx_per_seq: 512 }), 256);
  assert.equal(contextSize({ n_ctx_per_seq: 512 }), 512);
  assert.equal(contextSize({}), 0);
  assert.equal(contextSize(null), 0);
  assert.equal(contextSize({ default_generation_settings: { n_ctx: 'big' } }), 0);
  assert.equal(capMaxTokens(4000, 256), 255);
  assert.equal(capMaxTokens(48, 256), 48);
  assert.equal(capMaxTokens(undefined, 256), undefined, 'no limit set: the server fills the sequence');
  assert.equal(capMaxTokens(4000, 0), 4000, 'context unknown: sent as set');
});

test('context: the messages the latest reply left out', () => {
  const messages = [
    { role: 'user', content: 'one' }, { role: 'assistant', content: 'first reply' },
    { role: 'user', content: 'two' }, { role: 'assistant', content: '', error: 'failed' },
    { role: 'user', content: 'three' }, { role: 'assistant', content: 'second reply', dropped: 2 },
    { role: 'user', content: 'four' }, { role: 'assistant', content: '', pending: true },
  ];
  assert.deepEqual(sentIndices(messages), [0, 1, 2, 4, 5, 6]);
  assert.deepEqual(sentIndices(messages, 5), [0, 1, 2, 4]);
  // The reply at 5 was sent 0, 1, 2, 4; the server left out the first two.
  assert.deepEqual([...leftOutIndices(messages)], [0, 1]);
  // A newer reply that saw everything: nothing is left out any more.
  const later = [...messages.slice(0, 7), { role: 'assistant', content: 'third', dropped: 0 }];
  assert.deepEqual([...leftOutIndices(later)], []);
  // Replies from before the server said (no `dropped`) are passed over.
  const older = [...messages.slice(0, 7), { role: 'assistant', content: 'third' }];
  assert.deepEqual([...leftOutIndices(older)], [0, 1]);
  assert.deepEqual([...leftOutIndices([{ role: 'user', content: 'x' }])], []);
  assert.equal(droppedNote(0, 256), '');
  assert.equal(droppedNote(1, 256), '1 older message left out to fit the 256-token context');
  assert.equal(droppedNote(4, 0), '4 older messages left out to fit the context');
});
