// A small Markdown renderer for the chat page: headings, paragraphs, bold, italic,
// strikethrough, inline code, fenced code blocks, lists (nested), block quotes, rules,
// tables and links.
//
// Safe by construction: all text of the input is HTML-escaped before any tag is added, and
// the only tags and attributes in the output are the ones written here. Link targets are
// limited to http(s), mailto and relative URLs without control characters or spaces.
//
// A classic script (no modules, so the page also works from a file:// URL); it defines
// `TesseraMarkdown` on the global object and, under node, module.exports.
(function (root) {
  'use strict';

  const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
  }

  // `url` is already HTML-escaped. Returns it when it is safe as an href, else null.
  function safeUrl(url) {
    if (/[\x00-\x20\x7f]/.test(url)) return null;  // browsers drop these inside schemes
    if (/^(https?:\/\/|mailto:)/i.test(url)) return url;
    const colon = url.indexOf(':');
    const cut = url.search(/[/?#]/);
    if (colon < 0 || (cut >= 0 && cut < colon)) return url;  // relative: no scheme
    return null;
  }

  const BLOCK_START = /^ {0,3}(#{1,6}\s|>|`{3,}|~{3,}|([-*_])( *\2){2,} *$)/;
  const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?: +(.*))?$/;
  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
  const TABLE_RULE = /^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$/;

  // Inline Markdown of one block's text (raw, not escaped) to HTML.
  function renderInline(text) {
    const slots = [];
    const keep = (html) => `\u0000${slots.push(html) - 1}\u0000`;
    let s = String(text).replace(/\u0000/g, '');  // so that no input can forge a slot
    s = s.replace(/\\([\\`*_{}\[\]()#+\-.!~|>])/g, (m, c) => keep(escapeHtml(c)));
    s = s.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (m, ticks, code) => {
      const inner = /^ .* $/.test(code) ? code.slice(1, -1) : code;
      return keep(`<code>${escapeHtml(inner)}</code>`);
    });
    s = escapeHtml(s);
    s = s.replace(/!?\[([^\]]*)\]\(([^()\s]*)(?:\s+&quot;[^]*?&quot;)?\)/g, (m, label, url) => {
      const href = safeUrl(url);
      if (href === null) return m;
      return keep(`<a href="${href}" target="_blank" rel="noopener noreferrer">` +
                  emphasis(label || url) + '</a>');
    });
    s = s.replace(/\bhttps?:\/\/(?:(?!&(?:lt|gt|quot|#39);)[^\s\u0000])+/g, (url) => {
      const trail = /(?:[.,:;!?'")\]*_~]|&amp;)+$/.exec(url);
      const head = trail ? url.slice(0, trail.index) : url;
      const href = safeUrl(head);
      if (href === null || head.length < 10) return url;
      return keep(`<a href="${href}" target="_blank" rel="noopener noreferrer">${head}</a>`) +
             (trail ? trail[0] : '');
    });
    s = emphasis(s);
    for (let pass = 0; pass < 4 && s.includes('\u0000'); pass++) {
      s = s.replace(/\u0000(\d+)\u0000/g, (m, i) => slots[Number(i)] ?? '');
    }
    return s;
  }

  // Bold, italic and strikethrough over escaped text.
  function emphasis(s) {
    return s
      .replace(/\*\*\*(?=\S)([^]*?\S)\*\*\*/g, '<strong><em>$1</em></strong>')
      .replace(/\*\*(?=\S)([^]*?\S)\*\*/g, '<strong>$1</strong>')
      .replace(/(^|[^\w])__(?=\S)([^]*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
      .replace(/\*(?=[^\s*])([^*]*?[^\s*])\*/g, '<em>$1</em>')
      .replace(/\*(?=[^\s*])([^\s*])\*/g, '<em>$1</em>')
      .replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_]|[^\s_])_(?!\w)/g, '$1<em>$2</em>')
      .replace(/~~(?=\S)([^]*?\S)~~/g, '<del>$1</del>');
  }

  function splitRow(line) {
    let row = line.trim();
    if (row.startsWith('|')) row = row.slice(1);
    if (row.endsWith('|') && !row.endsWith('\\|')) row = row.slice(0, -1);
    return row.split(/(?<!\\)\|/).map((cell) => cell.trim());
  }

  function renderTable(lines, start) {
    const head = splitRow(lines[start]);
    const aligns = splitRow(lines[start + 1]).map((c) =>
      c.endsWith(':') ? (c.startsWith(':') ? 'center' : 'right') : c.startsWith(':') ? 'left' : '');
    const cell = (tag, text, k) =>
      `<${tag}${aligns[k] ? ` style="text-align:${aligns[k]}"` : ''}>${renderInline(text)}</${tag}>`;
    let html = '<table><thead><tr>' + head.map((c, k) => cell('th', c, k)).join('') +
               '</tr></thead><tbody>';
    let i = start + 2;
    for (; i < lines.length && lines[i].includes('|') && lines[i].trim() !== ''; i++) {
      const cells = splitRow(lines[i]);
      html += '<tr>' + head.map((h, k) => cell('td', cells[k] ?? '', k)).join('') + '</tr>';
    }
    return { html: html + '</tbody></table>', next: i };
  }

  // The list that starts at lines[start]; nested lists are rendered recursively.
  function renderList(lines, start) {
    const first = ITEM.exec(lines[start]);
    const base = first[1].length;
    const ordered = /\d/.test(first[2]);
    const items = [];
    let loose = false;
    let i = start;
    for (; i < lines.length; i++) {
      const line = lines[i];
      const m = ITEM.exec(line);
      if (m && m[1].length < base + 2) {
        if (/\d/.test(m[2]) !== ordered) break;  // another kind of list starts here
        items.push({ indent: m[1].length + m[2].length + 1, body: [m[3] ?? ''] });
        continue;
      }
      const item = items[items.length - 1];
      if (line.trim() === '') {
        const next = lines.slice(i + 1).find((l) => l.trim() !== '');
        if (next === undefined) break;
        const nm = ITEM.exec(next);
        const nested = /^ +/.exec(next)?.[0].length >= Math.min(item.indent, base + 2);
        if (!nested && !(nm && nm[1].length < base + 2 && /\d/.test(nm[2]) === ordered)) break;
        loose = true;
        item.body.push('');
        continue;
      }
      const indent = /^ */.exec(line)[0].length;
      if (indent >= base + 2) {
        item.body.push(line.slice(Math.min(indent, item.indent)));
      } else if (!BLOCK_START.test(line) && item.body[item.body.length - 1] !== '') {
        item.body.push(line.trim());  // a lazy continuation of the item's paragraph
      } else {
        break;
      }
    }
    const num = ordered ? parseInt(first[2], 10) : 1;
    const open = ordered ? (num !== 1 ? `<ol start="${num}">` : '<ol>') : '<ul>';
    const html = items.map((item) => {
      let inner = renderBlocks(item.body);
      if (!loose) inner = inner.replace(/^<p>([^]*?)<\/p>\n?/, '$1');
      return `<li>${inner}</li>`;
    }).join('');
    return { html: open + html + (ordered ? '</ol>' : '</ul>'), next: i };
  }

  function renderBlocks(lines) {
    const out = [];
    let para = [];
    const flush = () => {
      if (para.length) out.push('<p>' + para.map(renderInline).join('<br>') + '</p>');
      para = [];
    };
    for (let i = 0; i < lines.length;) {
      const line = lines[i];
      let m;
      if ((m = FENCE.exec(line))) {
        flush();
        const close = new RegExp(`^ {0,3}${m[1][0] === '`' ? '`' : '~'}{${m[1].length},}\\s*$`);
        const body = [];
        for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
        i++;  // the closing fence; an unclosed block (still streaming) runs to the end
        const lang = /^[\w+#.-]{1,32}$/.test(m[2]) ? ` class="language-${escapeHtml(m[2])}"` : '';
        out.push(`<pre><code${lang}>${escapeHtml(body.join('\n'))}</code></pre>`);
      } else if (line.trim() === '') {
        flush();
        i++;
      } else if ((m = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/.exec(line))) {
        flush();
        out.push(`<h${m[1].length}>${renderInline(m[2])}</h${m[1].length}>`);
        i++;
      } else if (/^ {0,3}([-*_])( *\1){2,} *$/.test(line)) {
        flush();
        out.push('<hr>');
        i++;
      } else if (/^ {0,3}>/.test(line)) {
        flush();
        const quote = [];
        for (; i < lines.length && /^ {0,3}>/.test(lines[i]); i++) {
          quote.push(lines[i].replace(/^ {0,3}> ?/, ''));
        }
        out.push(`<blockquote>${renderBlocks(quote)}</blockquote>`);
      } else if (ITEM.test(line) && (para.length === 0 || ITEM.exec(line)[3] !== undefined)) {
        flush();
        const list = renderList(lines, i);
        out.push(list.html);
        i = list.next;
      } else if (line.includes('|') && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) &&
                 lines[i + 1].includes('-')) {
        flush();
        const table = renderTable(lines, i);
        out.push(table.html);
        i = table.next;
      } else {
        para.push(line.trim());
        i++;
      }
    }
    flush();
    return out.join('\n');
  }

  function renderMarkdown(source) {
    const text = String(source ?? '').replace(/\r\n?/g, '\n').replace(/\t/g, '    ');
    return renderBlocks(text.split('\n'));
  }

  const api = { renderMarkdown, renderInline, escapeHtml };
  root.TesseraMarkdown = api;
  if (typeof module === 'object' && module.exports) module.exports = api;
})(typeof globalThis === 'object' ? globalThis : this);
