/**
 * The web chat page: one self-contained HTML document (inline CSS and JS, no dependencies).
 * It posts messages to the JSON API and receives replies by SSE (EventSource reconnects and
 * resumes with Last-Event-ID), falling back to long polling where EventSource is missing. It
 * resumes from the last reply's `cursor` and drops replies whose `id` it already showed, so a
 * replay (a reconnect, a restarted in-memory gateway under a new epoch) shows each reply once.
 */

/** Options of {@link renderChatPage}. */
export interface ChatPageOptions {
  /** Page title. Default `chatgate`. */
  title?: string;
  /** Path prefix of the API, e.g. `` (default) or `/gateway`. */
  basePath?: string;
}

/** Renders the chat page. Option values are escaped into the document. */
export function renderChatPage(options: ChatPageOptions = {}): string {
  const title = escapeHtml(options.title ?? 'chatgate');
  const config = JSON.stringify({ api: `${options.basePath ?? ''}/api/chat/` }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>
  :root { color-scheme: light dark; --bg: #f6f7f9; --me: #d7ecff; --bot: #ffffff; --ink: #1d232b; --muted: #6b7480; }
  @media (prefers-color-scheme: dark) { :root { --bg: #15181c; --me: #1f3b57; --bot: #22272e; --ink: #e6e9ed; --muted: #98a1ad; } }
  * { box-sizing: border-box; }
  body { margin: 0; font: 15px/1.45 system-ui, sans-serif; background: var(--bg); color: var(--ink); display: flex; flex-direction: column; height: 100vh; }
  header { padding: 10px 16px; border-bottom: 1px solid #8883; display: flex; justify-content: space-between; align-items: baseline; }
  header h1 { font-size: 16px; margin: 0; }
  #status { font-size: 12px; color: var(--muted); }
  #log { flex: 1; overflow-y: auto; padding: 16px; display: flex; flex-direction: column; gap: 8px; }
  .msg { max-width: min(720px, 85%); padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; word-wrap: break-word; box-shadow: 0 1px 2px #0002; }
  .msg.user { align-self: flex-end; background: var(--me); }
  .msg.bot { align-self: flex-start; background: var(--bot); }
  .msg.failed { outline: 2px solid #d33; }
  .msg .note { display: block; margin-top: 4px; font-size: 12px; color: #d33; }
  .msg code { background: #8882; padding: 0 3px; border-radius: 4px; font-size: 90%; }
  .msg pre { background: #8882; padding: 8px; border-radius: 6px; overflow-x: auto; margin: 6px 0; white-space: pre; }
  #typing { min-height: 20px; padding: 0 16px; font-size: 12px; color: var(--muted); }
  form { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid #8883; }
  textarea { flex: 1; resize: none; font: inherit; padding: 8px; border-radius: 8px; border: 1px solid #8886; background: var(--bot); color: var(--ink); }
  button { font: inherit; padding: 8px 16px; border-radius: 8px; border: 0; background: #2f6fde; color: #fff; cursor: pointer; }
</style>
</head>
<body>
<header><h1>${title}</h1><span id="status">connecting…</span></header>
<main id="log" aria-live="polite"></main>
<div id="typing"></div>
<form id="composer">
  <textarea id="input" rows="2" placeholder="Type a message — Enter to send, Shift+Enter for a new line" aria-label="Message" autofocus></textarea>
  <button id="send" type="submit">Send</button>
</form>
<script>
(() => {
  const CONFIG = ${config};
  const $ = (id) => document.getElementById(id);
  const randomId = (prefix) => prefix + (crypto.randomUUID ? crypto.randomUUID() : Math.random().toString(36).slice(2) + Date.now().toString(36)).replace(/-/g, '').slice(0, 16);
  const params = new URLSearchParams(location.search);
  const conversation = params.get('c') || localStorage.getItem('chatgate.conversation') || randomId('c');
  localStorage.setItem('chatgate.conversation', conversation);
  const userId = localStorage.getItem('chatgate.user') || randomId('u');
  localStorage.setItem('chatgate.user', userId);
  const base = CONFIG.api + encodeURIComponent(conversation);
  // Where we are in the reply stream: the cursor of the last reply shown (opaque to the page).
  // Replies are told apart by id, so a replay after a reconnect or a gateway restart shows each once.
  let cursor = '0';
  const seen = new Set();
  const after = () => encodeURIComponent(cursor);
  let typingTimer;

  // Markdown subset, built with DOM nodes only (never innerHTML): fenced code, **bold**, \`code\`.
  function inline(el, text) {
    const re = /\\*\\*([^*\\n]+)\\*\\*|\`([^\`\\n]+)\`/g;
    let last = 0;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      el.appendChild(document.createTextNode(text.slice(last, m.index)));
      const node = document.createElement(m[1] !== undefined ? 'strong' : 'code');
      node.textContent = m[1] !== undefined ? m[1] : m[2];
      el.appendChild(node);
      last = re.lastIndex;
    }
    el.appendChild(document.createTextNode(text.slice(last)));
  }
  function render(el, text, format) {
    if (format !== 'markdown') { el.textContent = text; return; }
    text.split(/^\`\`\`[^\\n]*\\n?/m).forEach((part, i) => {
      if (i % 2) {
        const pre = document.createElement('pre');
        pre.textContent = part;
        el.appendChild(pre);
      } else {
        const span = document.createElement('span');
        inline(span, part);
        el.appendChild(span);
      }
    });
  }
  function add(kind, text, format) {
    const el = document.createElement('div');
    el.className = 'msg ' + kind;
    render(el, text, format);
    $('log').appendChild(el);
    el.scrollIntoView({ block: 'end' });
    return el;
  }
  function onReply(reply) {
    cursor = reply.cursor;
    if (seen.has(reply.id)) return;
    seen.add(reply.id);
    $('typing').textContent = '';
    add('bot', reply.text, reply.format);
  }
  function onTyping() {
    $('typing').textContent = 'typing…';
    clearTimeout(typingTimer);
    typingTimer = setTimeout(() => { $('typing').textContent = ''; }, 6000);
  }
  function mark(el, note) {
    let span = el.querySelector('.note');
    if (!note) { el.classList.remove('failed'); el.title = ''; if (span) span.remove(); return; }
    if (!span) { span = document.createElement('span'); span.className = 'note'; el.appendChild(span); }
    el.classList.add('failed');
    span.textContent = note;
    el.title = note;
  }
  async function post(text, clientMessageId, el) {
    const retry = () => { el.onclick = null; post(text, clientMessageId, el); };
    try {
      const res = await fetch(base + '/messages', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, clientMessageId, userId }) });
      const body = await res.json().catch(() => ({}));
      if (res.status === 429 || res.status === 413 || res.status === 403) {
        // Refused, not lost: the reason stays under the message; a rate-limited one can be sent again.
        mark(el, 'Not sent: ' + (body.error || res.statusText) + (res.status === 429 ? ' Click to send again.' : ''));
        if (res.status === 429) el.onclick = retry;
        return;
      }
      if (!res.ok) throw new Error(body.error || res.statusText);
      mark(el, '');
    } catch (err) {
      mark(el, 'Not sent (' + err.message + '). Click to retry.');
      el.onclick = retry;
    }
  }
  function subscribe() {
    if (!window.EventSource) return longPoll();
    const source = new EventSource(base + '/events?after=' + after());
    source.onopen = () => { $('status').textContent = 'connected'; };
    source.onerror = () => { $('status').textContent = 'reconnecting…'; };
    source.addEventListener('message', (e) => onReply(JSON.parse(e.data)));
    source.addEventListener('typing', onTyping);
  }
  async function longPoll() {
    $('status').textContent = 'connected (polling)';
    for (;;) {
      try {
        const res = await fetch(base + '/messages?after=' + after() + '&timeoutMs=25000');
        (await res.json()).messages.forEach(onReply);
      } catch { await new Promise((r) => setTimeout(r, 2000)); }
    }
  }
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('input').value.trim();
    if (!text) return;
    $('input').value = '';
    post(text, randomId('m'), add('user', text, 'text'));
  });
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('composer').requestSubmit(); }
  });
  subscribe();
})();
</script>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
