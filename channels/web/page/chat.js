// The web chat page: picks the conversation (?c=, else the last one, else a new one), shows its
// history from the server, then live replies, and wires the composer (send, attach, stop, new).
import { createPresser } from './choices.js';
import { createSender } from './composer.js';
import { connect } from './connection.js';
import { createPastChats } from './past-chats.js';
import { createTimeline } from './timeline.js';

const HISTORY_PAGE = 50;
const TYPING_HOLD_MS = 6000;
const WAIT_FOR_TURN_MS = 15000;
/** How long a taken message may wait for its turn before the page says no worker has taken it yet. */
const QUEUED_HINT_MS = 5000;
const PHONE = window.matchMedia('(max-width: 600px)');

const $ = (id) => document.getElementById(id);
const CONFIG = JSON.parse($('chat-config').textContent);
// 128 random bits: an id is all that keeps a conversation to itself. (crypto.randomUUID is missing on plain http away from localhost; getRandomValues is not.)
const randomId = (prefix) => prefix + Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, '0')).join('');
const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
// Storage can be off (a private window, a blocked site): then the page still works, it just forgets.
const storage = {
  get: (key) => { try { return localStorage.getItem(key); } catch { return null; } },
  set: (key, value) => { try { localStorage.setItem(key, value); } catch { /* not kept */ } },
};

const params = new URLSearchParams(location.search);
const asked = params.get('c');
const stored = storage.get('chatgate.conversation');
const conversation = asked && ID_RE.test(asked) ? asked : stored && ID_RE.test(stored) ? stored : randomId('c');
storage.set('chatgate.conversation', conversation);
if (asked !== conversation) {
  // The address names the conversation, so it can be bookmarked and reopened after "New conversation".
  params.set('c', conversation);
  history.replaceState(null, '', location.pathname + '?' + params.toString());
}
const userId = storage.get('chatgate.user') || randomId('u');
storage.set('chatgate.user', userId);
const base = CONFIG.api + encodeURIComponent(conversation);

const timeline = createTimeline($('messages'), $('log'), $('jump'), createPresser({ base, userId, randomId }));
const pastChats = createPastChats(storage, $('past-chats'), $('conversations'), conversation);
// Phones have no Shift+Enter to explain, and the long hint would be clipped there.
const placeholder = () => { $('input').placeholder = PHONE.matches ? 'Message' : 'Type a message — Enter to send, Shift+Enter for a new line'; };
placeholder();
PHONE.addEventListener('change', placeholder);
if (asked !== null && asked !== conversation) timeline.notice('“' + asked.slice(0, 80) + '” is not a conversation id (1–64 of A–Z, a–z, 0–9, _ and -): this is conversation ' + conversation + '.');
let before = null;
let loadingOlder = false;
let typingTimer;
let waitingForReply = false;
let waitTimer;
const pending = new Set();
let pendingTimer;

function setStatus(state, text) {
  $('status').textContent = text;
  $('status').dataset.state = state;
}

function setRunning() {
  const running = waitingForReply || timeline.streaming() || $('typing').textContent !== '';
  $('stop').hidden = !running;
}

/** A taken message waits for its turn: say so under it until a worker shows signs of the turn. */
function markPending(el) {
  const note = document.createElement('div');
  note.className = 'pending';
  note.textContent = 'sent · waiting for the reply';
  el.appendChild(note);
  pending.add(note);
  clearTimeout(pendingTimer);
  pendingTimer = setTimeout(() => {
    for (const n of pending) n.textContent = 'queued · no worker has taken it yet; it is kept and answered when one runs (/status tells more)';
  }, QUEUED_HINT_MS);
}

/** A turn started (typing, live text, a streamed reply): the waiting messages are taken. */
function clearPending() {
  clearTimeout(pendingTimer);
  for (const n of pending) n.remove();
  pending.clear();
}

function onTyping() {
  clearPending();
  $('typing').textContent = 'typing…';
  clearTimeout(typingTimer);
  typingTimer = setTimeout(() => {
    $('typing').textContent = '';
    setRunning();
  }, TYPING_HOLD_MS);
  setRunning();
}

function onReply(reply) {
  if (reply.liveReplyId) clearPending();
  timeline.onReply(reply);
  waitingForReply = false;
  $('typing').textContent = '';
  setRunning();
}

async function fetchHistory(cursor) {
  const res = await fetch(base + '/history?limit=' + HISTORY_PAGE + (cursor ? '&before=' + encodeURIComponent(cursor) : ''));
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error || 'HTTP ' + res.status);
  return body;
}

function showEarlierButton() {
  $('earlier').hidden = before === null;
}

async function loadOlder() {
  if (loadingOlder || before === null) return;
  loadingOlder = true;
  $('earlier').disabled = true;
  try {
    const page = await fetchHistory(before);
    timeline.showHistory(page.messages || [], true);
    before = page.before ?? null;
    $('earlier').textContent = 'Earlier messages';
  } catch (err) {
    $('earlier').textContent = 'Earlier messages could not be loaded (' + err.message + ') — try again';
  } finally {
    loadingOlder = false;
    $('earlier').disabled = false;
    showEarlierButton();
  }
}

/** The newest history page; then replies continue from the cursor it names (or the whole reply buffer without one). */
async function start() {
  let after = '0';
  try {
    const page = await fetchHistory();
    timeline.showHistory(page.messages || [], false);
    const first = (page.messages || []).find((m) => m.role === 'user');
    if (first) pastChats.note(conversation, first.text);
    before = page.before ?? null;
    if (typeof page.after === 'string') after = page.after;
  } catch (err) {
    const retry = document.createElement('button');
    retry.type = 'button';
    retry.textContent = 'Reload';
    retry.addEventListener('click', () => location.reload());
    timeline.notice('The conversation so far could not be loaded (' + err.message + '). ', retry);
  }
  showEarlierButton();
  connect(base, after, { reply: onReply, delta: (d) => { clearPending(); timeline.onDelta(d); setRunning(); }, partial: (p) => { clearPending(); timeline.onPartial(p); setRunning(); }, typing: onTyping, status: setStatus });
}

let file = null;
function setFile(chosen) {
  file = chosen;
  $('attachment').hidden = !file;
  $('attachment-name').textContent = file ? file.name + ' (' + Math.ceil(file.size / 1024) + ' KB)' : '';
  if (!file) $('file').value = '';
}

const sender = createSender({
  base, userId, randomId, timeline,
  onSending: () => {
    // Until the first sign of the turn (typing, a delta, the reply); typing events then keep it.
    waitingForReply = true;
    clearTimeout(waitTimer);
    waitTimer = setTimeout(() => { waitingForReply = false; setRunning(); }, WAIT_FOR_TURN_MS);
    setRunning();
  },
  onAccepted: (item) => {
    // A command is answered by the gateway itself: it waits for no worker.
    if (item.text.startsWith('/')) return;
    pastChats.note(conversation, item.text || (item.file && item.file.name));
    markPending(item.el);
  },
  onFailed: () => {
    waitingForReply = false;
    setRunning();
  },
  edit: (text, editFile) => {
    $('input').value = text;
    if (editFile) setFile(editFile);
    $('input').focus();
  },
});

$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = $('input').value.trim();
  if (!text && !file) return;
  $('input').value = '';
  sender.send(text, file);
  setFile(null);
});
$('input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $('composer').requestSubmit();
  }
});
$('attach').addEventListener('click', () => $('file').click());
$('file').addEventListener('change', () => setFile($('file').files[0] || null));
$('attachment-remove').addEventListener('click', () => setFile(null));
$('stop').addEventListener('click', () => sender.send('/stop'));
$('new-chat').addEventListener('click', () => {
  const id = randomId('c');
  storage.set('chatgate.conversation', id);
  location.assign(location.pathname + '?c=' + id);
});
$('earlier').addEventListener('click', loadOlder);
$('log').addEventListener('scroll', () => {
  if ($('log').scrollTop < 40) loadOlder();
});

start();
