// The tessera chat page: conversations in localStorage, replies streamed from
// /v1/chat/completions (Server-Sent Events over fetch), Markdown via markdown.js. The
// model's context (GET /props) caps the reply's token limit; when the server leaves old
// turns out to fit it (`dropped_messages`), the reply says so and they are shown dimmed.
'use strict';

// ---- Server-Sent Events ---------------------------------------------------------------

// Splits a text stream into events; push() returns the data of each completed event.
class SSEParser {
  constructor() {
    this.buffer = '';
    this.data = [];
  }

  push(text) {
    this.buffer += text;
    const events = [];
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      if (end < 0) break;
      // A '\r' at the end of the buffer may be half of a "\r\n" split across chunks.
      if (this.buffer[end] === '\r' && end === this.buffer.length - 1) break;
      const width = this.buffer.startsWith('\r\n', end) ? 2 : 1;
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + width);
      this.line(line, events);
    }
    return events;
  }

  // The end of the stream: a last line without a newline, an event without a blank line.
  finish() {
    const events = [];
    if (this.buffer) this.line(this.buffer.replace(/\r$/, ''), events);
    this.buffer = '';
    this.line('', events);
    return events;
  }

  line(line, events) {
    if (line === '') {
      if (this.data.length) events.push(this.data.join('\n'));
      this.data = [];
    } else if (!line.startsWith(':')) {  // ':' starts a comment
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') this.data.push(value);
    }
  }
}

// ---- the model's context ------------------------------------------------------------

// Cells of one sequence (prompt plus reply) from GET /props; 0 when it does not say.
function contextSize(props) {
  const settings = props && props.default_generation_settings;
  const n = Number((settings && settings.n_ctx) ?? (props && props.n_ctx_per_seq));
  return Number.isInteger(n) && n > 0 ? n : 0;
}

// The reply's token limit sized to the context: a limit past it cannot be reached (the
// server would stop there anyway), so at most the context's size minus one prompt token.
function capMaxTokens(maxTokens, nCtx) {
  if (maxTokens === undefined || !(nCtx > 1)) return maxTokens;
  return Math.min(maxTokens, nCtx - 1);
}

// The indices of `messages` sent with a request for a reply at `end`: every message
// before it but replies that are pending or empty.
function sentIndices(messages, end = messages.length) {
  const out = [];
  for (let i = 0; i < end; i++) {
    const m = messages[i];
    if (m.pending || (m.role === 'assistant' && !m.content)) continue;
    out.push(i);
  }
  return out;
}

// The messages the latest reply did not see: the server left out the oldest
// `dropped_messages` it was sent (the system prompt is not among `messages`).
function leftOutIndices(messages) {
  for (let j = messages.length - 1; j >= 0; j--) {
    const m = messages[j];
    if (m.role !== 'assistant' || typeof m.dropped !== 'number') continue;
    return new Set(sentIndices(messages, j).slice(0, m.dropped));
  }
  return new Set();
}

function droppedNote(dropped, nCtx) {
  if (!dropped) return '';
  const what = dropped === 1 ? '1 older message' : `${dropped} older messages`;
  return `${what} left out to fit the ${nCtx ? `${nCtx}-token ` : ''}context`;
}

// ---- storage --------------------------------------------------------------------------

const KEYS = {
  conversations: 'tessera.conversations',
  current: 'tessera.current',
  settings: 'tessera.settings',
  apiKey: 'tessera.apiKey',
};

const DEFAULT_SETTINGS = {
  system: '', temperature: 0.8, top_p: 0.95, top_k: '', min_p: '', max_tokens: '', extra: '',
};

function load(key, fallback) {
  try {
    const text = localStorage.getItem(key);
    return text === null ? fallback : JSON.parse(text);
  } catch {
    return fallback;
  }
}

function save(key, value) {
  try {
    if (value === null || value === undefined) localStorage.removeItem(key);
    else localStorage.setItem(key, JSON.stringify(value));
  } catch (e) {
    showError(`Could not save to the browser's storage: ${e.message}`);
  }
}

// ---- errors from the server -----------------------------------------------------------

class ApiError extends Error {
  constructor(status, message, type) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

class NetworkError extends Error {}

async function errorFromResponse(res) {
  let message = `${res.status} ${res.statusText || 'error'}`;
  let type = '';
  try {
    const text = await res.text();
    try {
      const body = JSON.parse(text);
      if (body && body.error) {
        message = body.error.message || message;
        type = body.error.type || '';
      } else if (text) {
        message = `${message}: ${text.slice(0, 300)}`;
      }
    } catch {
      if (text) message = `${message}: ${text.slice(0, 300)}`;
    }
  } catch { /* the body could not be read; keep the status line */ }
  return new ApiError(res.status, message, type);
}

function describeError(e) {
  if (e instanceof ApiError) {
    if (e.status === 401) return `Authentication failed (401): ${e.message}`;
    return `Server error ${e.status}${e.type ? ` (${e.type})` : ''}: ${e.message}`;
  }
  return e.message || String(e);
}

// ---- the page -------------------------------------------------------------------------

const $ = (id) => document.getElementById(id);

const state = {
  conversations: [],
  currentId: null,
  settings: { ...DEFAULT_SETTINGS },
  apiKey: '',
  model: '',
  nCtx: 0,                // cells of one sequence, from /props (0: unknown)
  streaming: null,        // { controller, conv, msg } while a reply is generated
  afterKey: null,         // what to run once a key is accepted
  renderQueued: false,
};

async function apiFetch(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (options.body) headers['Content-Type'] = 'application/json';
  if (state.apiKey) headers.Authorization = `Bearer ${state.apiKey}`;
  let res;
  try {
    res = await fetch(path, { ...options, headers, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    setStatus('down');
    throw new NetworkError(
      `Cannot reach the server at ${location.origin}: it may have stopped (server gone). ` +
      `(${e.message})`);
  }
  if (!res.ok) throw await errorFromResponse(res);
  return res;
}

function showError(text) {
  $('error-text').textContent = text;
  $('error').hidden = false;
}

function clearError() {
  $('error').hidden = true;
  $('error-text').textContent = '';
}

function setStatus(kind, text) {
  const labels = { ok: 'connected', loading: 'loading model…', down: 'server unreachable' };
  $('status').dataset.state = kind;
  $('status-text').textContent = text || labels[kind] || kind;
}

// ---- conversations --------------------------------------------------------------------

function currentConversation() {
  return state.conversations.find((c) => c.id === state.currentId) || null;
}

function persistConversations() {
  save(KEYS.conversations, state.conversations.map((c) => ({
    ...c, messages: c.messages.map(({ pending, ...m }) => m),
  })));
  save(KEYS.current, state.currentId);
}

function newConversation() {
  const conv = {
    id: `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`,
    title: 'New chat', created: Date.now(), updated: Date.now(), messages: [],
  };
  state.conversations.unshift(conv);
  state.currentId = conv.id;
  persistConversations();
  return conv;
}

function switchTo(id) {
  state.currentId = id;
  save(KEYS.current, id);
  renderAll();
  document.body.classList.remove('show-sidebar');
}

function deleteConversation(id) {
  if (state.streaming && state.streaming.conv.id === id) state.streaming.controller.abort();
  state.conversations = state.conversations.filter((c) => c.id !== id);
  if (state.currentId === id) state.currentId = state.conversations[0]?.id ?? null;
  persistConversations();
  renderAll();
}

function renderConversationList() {
  const list = $('conv-list');
  list.replaceChildren();
  const sorted = [...state.conversations].sort((a, b) => b.updated - a.updated);
  for (const conv of sorted) {
    const li = document.createElement('li');
    li.className = conv.id === state.currentId ? 'active' : '';
    li.dataset.id = conv.id;
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'conv-open';
    open.textContent = conv.title || 'New chat';
    open.title = conv.title || '';
    open.addEventListener('click', () => switchTo(conv.id));
    const del = document.createElement('button');
    del.type = 'button';
    del.className = 'conv-delete';
    del.textContent = '×';
    del.setAttribute('aria-label', `Delete "${conv.title}"`);
    del.addEventListener('click', () => deleteConversation(conv.id));
    li.append(open, del);
    list.append(li);
  }
}

// ---- messages -------------------------------------------------------------------------

function messageMeta(msg) {
  const parts = [];
  if (msg.pending) parts.push(msg.content ? 'generating…' : 'waiting for the model…');
  if (msg.stopped) parts.push('stopped');
  if (msg.finish === 'length') parts.push('max tokens reached');
  if (msg.dropped) parts.push(droppedNote(msg.dropped, state.nCtx));
  if (msg.stats) parts.push(msg.stats);
  return parts.join(' · ');
}

function fillMessage(el, msg) {
  const content = el.querySelector('.content');
  if (msg.role === 'assistant') content.innerHTML = TesseraMarkdown.renderMarkdown(msg.content);
  else content.textContent = msg.content;
  el.classList.toggle('pending', Boolean(msg.pending));
  el.classList.toggle('stopped', Boolean(msg.stopped));
  el.classList.toggle('failed', Boolean(msg.error));
  el.dataset.chunks = String(msg.chunks || 0);
  const meta = el.querySelector('.meta');
  meta.textContent = messageMeta(msg);
  meta.hidden = meta.textContent === '';
  const error = el.querySelector('.msg-error');
  error.textContent = msg.error || '';
  error.hidden = !msg.error;
}

function messageElement(msg) {
  const el = document.createElement('article');
  el.className = `msg ${msg.role}`;
  const role = document.createElement('div');
  role.className = 'role';
  role.textContent = msg.role === 'user' ? 'You' : 'Assistant';
  const content = document.createElement('div');
  content.className = 'content';
  const error = document.createElement('div');
  error.className = 'msg-error';
  const meta = document.createElement('div');
  meta.className = 'meta';
  el.append(role, content, error, meta);
  fillMessage(el, msg);
  return el;
}

function renderMessages() {
  const conv = currentConversation();
  const box = $('messages');
  box.replaceChildren();
  $('conv-title').textContent = conv ? conv.title : 'New chat';
  if (!conv || conv.messages.length === 0) {
    const empty = document.createElement('div');
    empty.className = 'empty';
    empty.textContent = state.model ? `Chat with ${state.model}` : 'Start a conversation';
    box.append(empty);
    return;
  }
  const leftOut = leftOutIndices(conv.messages);
  conv.messages.forEach((msg, i) => {
    const el = messageElement(msg);
    if (leftOut.has(i)) {
      el.classList.add('left-out');
      el.title = 'Not seen by the latest reply: left out to fit the model\'s context';
    }
    box.append(el);
  });
  box.scrollTop = box.scrollHeight;
}

function renderAll() {
  renderConversationList();
  renderMessages();
}

// Re-renders the message being streamed, at most once per frame.
function queueStreamRender() {
  if (state.renderQueued) return;
  state.renderQueued = true;
  requestAnimationFrame(() => {
    state.renderQueued = false;
    const s = state.streaming;
    if (!s || s.conv.id !== state.currentId) return;
    const box = $('messages');
    const el = box.lastElementChild;
    if (!el || !el.classList.contains('assistant')) return;
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
    fillMessage(el, s.msg);
    if (atBottom) box.scrollTop = box.scrollHeight;
  });
}

// ---- generation -----------------------------------------------------------------------

function numberSetting(name) {
  const v = state.settings[name];
  if (v === '' || v === null || v === undefined) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

function extraFields() {
  const text = (state.settings.extra || '').trim();
  if (!text) return {};
  const value = JSON.parse(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('must be a JSON object');
  }
  return value;
}

function requestBody(conv) {
  const messages = [];
  const system = (state.settings.system || '').trim();
  if (system) messages.push({ role: 'system', content: system });
  for (const i of sentIndices(conv.messages)) {
    messages.push({ role: conv.messages[i].role, content: conv.messages[i].content });
  }
  const body = { messages, stream: true, stream_options: { include_usage: true } };
  if (state.model) body.model = state.model;
  for (const name of ['temperature', 'top_p', 'top_k', 'min_p', 'max_tokens']) {
    const n = name === 'max_tokens' ? capMaxTokens(numberSetting(name), state.nCtx) : numberSetting(name);
    if (n !== undefined) body[name] = n;
  }
  return Object.assign(body, extraFields());
}

function setBusy(busy) {
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  $('send').disabled = busy;
}

// Reads the SSE reply into `msg`; `started`: when the request was sent.
async function readStream(res, msg, signal, started) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SSEParser();
  const onData = (data) => {
    if (data === '[DONE]') return true;
    let chunk;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new Error(`The server sent an event that is not JSON: ${data.slice(0, 200)}`);
    }
    if (chunk.error) throw new ApiError(chunk.error.code || 500, chunk.error.message, chunk.error.type);
    const choice = chunk.choices && chunk.choices[0];
    if (choice) {
      const piece = choice.delta && choice.delta.content;
      if (piece) msg.content += piece;
      msg.chunks = (msg.chunks || 0) + 1;
      if (choice.finish_reason) msg.finish = choice.finish_reason;
    }
    if (chunk.usage) msg.usage = chunk.usage;
    if (typeof chunk.dropped_messages === 'number') msg.dropped = chunk.dropped_messages;
    queueStreamRender();
    return false;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      const events = done ? parser.finish() : parser.push(value);
      for (const data of events) if (onData(data)) return finishStats(msg, started);
      if (done) break;
    }
  } catch (e) {
    if (signal.aborted || e instanceof ApiError || e.message.startsWith('The server sent')) throw e;
    throw new NetworkError(`The connection to the server was lost (server gone?): ${e.message}`);
  }
  if (!msg.finish) throw new NetworkError('The reply ended early: the stream closed without [DONE].');
  return finishStats(msg, started);
}

function finishStats(msg, started) {
  const seconds = (performance.now() - started) / 1000;
  const tokens = msg.usage ? msg.usage.completion_tokens : undefined;
  if (tokens !== undefined) {
    msg.stats = `${tokens} tokens` + (seconds > 0 && tokens > 1 ? `, ${(tokens / seconds).toFixed(1)} tok/s` : '');
  }
}

async function generate(conv) {
  let body;
  try {
    body = requestBody(conv);
  } catch (e) {
    showError(`Settings: extra request fields: ${e.message}`);
    return;
  }
  const msg = { role: 'assistant', content: '', pending: true, chunks: 0 };
  conv.messages.push(msg);
  conv.updated = Date.now();
  const controller = new AbortController();
  state.streaming = { controller, conv, msg };
  setBusy(true);
  clearError();
  renderAll();
  const started = performance.now();
  try {
    const res = await apiFetch('/v1/chat/completions', {
      method: 'POST', body: JSON.stringify(body), signal: controller.signal,
    });
    setStatus('ok');
    await readStream(res, msg, controller.signal, started);
  } catch (e) {
    if (controller.signal.aborted) {
      msg.stopped = true;
    } else if (e instanceof ApiError && e.status === 401) {
      conv.messages.splice(conv.messages.indexOf(msg), 1);
      askForKey(e.message, () => generate(conv));
    } else {
      msg.error = describeError(e);
      showError(msg.error);
    }
  } finally {
    delete msg.pending;
    state.streaming = null;
    setBusy(false);
    persistConversations();
    renderAll();
  }
}

function sendPrompt() {
  const input = $('prompt');
  const text = input.value.trim();
  if (!text || state.streaming) return;
  const conv = currentConversation() || newConversation();
  conv.messages.push({ role: 'user', content: text });
  if (conv.title === 'New chat') conv.title = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  input.value = '';
  autoGrow(input);
  generate(conv);
}

// ---- the API key ----------------------------------------------------------------------

function askForKey(reason, then) {
  state.afterKey = then || null;
  const error = $('key-error');
  error.textContent = state.apiKey ? `The saved key was rejected: ${reason}` : '';
  error.hidden = !state.apiKey;
  $('key-input').value = '';
  const dialog = $('key-dialog');
  if (!dialog.open) dialog.showModal();
  $('key-input').focus();
}

async function submitKey(event) {
  event.preventDefault();
  const key = $('key-input').value.trim();
  const error = $('key-error');
  const previous = state.apiKey;
  state.apiKey = key;
  try {
    await loadModels();
  } catch (e) {
    state.apiKey = previous;
    error.textContent = e instanceof ApiError && e.status === 401
      ? `Wrong API key: ${e.message}` : describeError(e);
    error.hidden = false;
    return;
  }
  save(KEYS.apiKey, key);
  error.hidden = true;
  $('key-dialog').close();
  clearError();
  const then = state.afterKey;
  state.afterKey = null;
  if (then) then();
}

function cancelKey() {
  $('key-dialog').close();
  state.afterKey = null;
  showError('This server requires an API key; none was given.');
}

// ---- the server -----------------------------------------------------------------------

async function loadModels() {
  const res = await apiFetch('/v1/models');
  const body = await res.json();
  state.model = body.data && body.data[0] ? body.data[0].id : '';
  try {
    state.nCtx = contextSize(await (await apiFetch('/props')).json());
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) throw e;
    state.nCtx = 0;  // an older server: the server's own limits apply
  }
  $('max_tokens').max = state.nCtx > 1 ? String(state.nCtx - 1) : '';
  setStatus('ok', state.model ? `connected · ${state.model}` : 'connected');
  if (!currentConversation() || currentConversation().messages.length === 0) renderMessages();
}

async function checkHealth() {
  let kind;
  try {
    const res = await fetch('/health', { cache: 'no-store', signal: AbortSignal.timeout(4000) });
    kind = res.ok ? 'ok' : res.status === 503 ? 'loading' : 'down';
  } catch {
    kind = 'down';
  }
  const was = $('status').dataset.state;
  if (kind === 'down') setStatus('down');
  else if (kind === 'loading') setStatus('loading');
  else if (was !== 'ok') {
    setStatus('ok');
    loadModels().catch((e) => {
      if (e instanceof ApiError && e.status === 401) askForKey(e.message);
    });
  }
}

// ---- settings -------------------------------------------------------------------------

const SETTING_FIELDS = ['system', 'temperature', 'top_p', 'top_k', 'min_p', 'max_tokens', 'extra'];

function showSettings() {
  for (const name of SETTING_FIELDS) $(name).value = state.settings[name] ?? '';
  validateExtra();
}

function validateExtra() {
  const box = $('extra-error');
  try {
    extraFields();
    box.hidden = true;
  } catch (e) {
    box.textContent = `Not valid: ${e.message}`;
    box.hidden = false;
  }
}

function onSettingInput(event) {
  state.settings[event.target.id] = event.target.value;
  save(KEYS.settings, state.settings);
  if (event.target.id === 'extra') validateExtra();
}

function autoGrow(textarea) {
  textarea.style.height = 'auto';
  textarea.style.height = `${Math.min(textarea.scrollHeight, 240)}px`;
}

// ---- start ----------------------------------------------------------------------------

function init() {
  state.conversations = load(KEYS.conversations, []);
  if (!Array.isArray(state.conversations)) state.conversations = [];
  state.currentId = load(KEYS.current, null);
  if (!currentConversation()) state.currentId = state.conversations[0]?.id ?? null;
  state.settings = { ...DEFAULT_SETTINGS, ...load(KEYS.settings, {}) };
  state.apiKey = load(KEYS.apiKey, '') || '';

  $('composer').addEventListener('submit', (e) => { e.preventDefault(); sendPrompt(); });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      sendPrompt();
    }
  });
  $('prompt').addEventListener('input', (e) => autoGrow(e.target));
  $('stop').addEventListener('click', () => state.streaming && state.streaming.controller.abort());
  $('new-chat').addEventListener('click', () => {
    const conv = currentConversation();
    if (!conv || conv.messages.length > 0) newConversation();
    renderAll();
    $('prompt').focus();
  });
  $('error-close').addEventListener('click', clearError);
  $('key-form').addEventListener('submit', submitKey);
  $('key-cancel').addEventListener('click', cancelKey);
  $('key-dialog').addEventListener('cancel', (e) => { e.preventDefault(); cancelKey(); });
  $('toggle-sidebar').addEventListener('click', () => document.body.classList.toggle('show-sidebar'));
  document.querySelector('main').addEventListener('click', (e) => {
    if (!e.target.closest('#toggle-sidebar')) document.body.classList.remove('show-sidebar');
  });
  for (const name of SETTING_FIELDS) $(name).addEventListener('input', onSettingInput);
  $('reset-settings').addEventListener('click', () => {
    state.settings = { ...DEFAULT_SETTINGS };
    save(KEYS.settings, state.settings);
    showSettings();
  });
  $('forget-key').addEventListener('click', () => {
    state.apiKey = '';
    save(KEYS.apiKey, null);
  });

  showSettings();
  renderAll();
  checkHealth();
  setInterval(checkHealth, 5000);
  $('prompt').focus();
}

if (typeof document !== 'undefined') {
  window.tessera = { SSEParser, state, leftOutIndices };
  document.addEventListener('DOMContentLoaded', init);
} else if (typeof module === 'object') {
  module.exports = { SSEParser, contextSize, capMaxTokens, sentIndices, leftOutIndices, droppedNote };
}
