// The conversation on screen: bubbles from the history, the user's own messages, live replies and
// streamed (partial) replies. It tells history and live replies apart by id: a live reply whose
// `replyId` (or `liveReplyId`) is an answer the history already showed is not shown again.
import { renderChoices, showDecided } from './choices.js';
import { renderInto } from './render.js';

/**
 * Creates the timeline over `list` (the bubbles) inside the scrolling `scroller`; `jump` (a button)
 * shows when a message arrives below while the user reads above, and scrolls down when clicked.
 * `press(reply, choice, el)` handles a press of a reply's button (choices.js).
 */
export function createTimeline(list, scroller, jump, press) {
  const historyIds = new Set();
  const shownReplies = new Set();
  const finishedLiveReplies = new Set();
  const live = new Map();
  const nearBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
  const toBottom = () => { scroller.scrollTop = scroller.scrollHeight; };
  if (jump) {
    jump.addEventListener('click', () => { toBottom(); jump.hidden = true; });
    scroller.addEventListener('scroll', () => { if (nearBottom()) jump.hidden = true; });
  }

  function bubble(role, text, format, at, attachments) {
    const el = document.createElement('div');
    el.className = 'msg ' + (role === 'user' ? 'user' : 'bot');
    const body = document.createElement('div');
    body.className = 'body';
    renderInto(body, text, format);
    el.appendChild(body);
    if (attachments && attachments.length > 0) el.appendChild(attachmentList(attachments));
    stamp(el, at);
    return el;
  }

  /** A bot bubble knows its reply (an edit finds it) and shows the reply's buttons. */
  function decorate(el, reply) {
    if (typeof reply.id === 'string') el.dataset.replyId = reply.id;
    if (press) renderChoices(el, reply, press);
    return el;
  }

  /** A reply edited (a question decided): its new text in its bubble, its buttons gone. */
  function onEdit(reply) {
    const el = [...list.querySelectorAll('.msg.bot')].find((m) => m.dataset.replyId === reply.edits);
    if (el) showDecided(el, reply.text, reply.format);
  }

  /** Adds a bubble at the end; follows it when the user was at the end (or sent it), else shows `jump`. */
  function append(el, follow) {
    const stick = follow || nearBottom();
    list.appendChild(el);
    if (stick) toBottom();
    else if (jump) jump.hidden = false;
    return el;
  }

  /** History entries: `older` pages go on top, keeping what the user looks at in place. */
  function showHistory(messages, older) {
    const nodes = messages.map((m) => {
      const el = bubble(m.role, m.text, m.format, m.at, m.attachments);
      if (m.role === 'assistant') {
        historyIds.add(m.id);
        decorate(el, m);
      }
      el.classList.add('history');
      return el;
    });
    if (!older) {
      list.append(...nodes);
      toBottom();
      return;
    }
    const height = scroller.scrollHeight;
    list.prepend(...nodes);
    scroller.scrollTop += scroller.scrollHeight - height;
  }

  /** A reply from the stream (SSE `message` or the long poll); replaces its live bubble if it ends a stream. */
  function onReply(reply) {
    if (shownReplies.has(reply.id)) return;
    shownReplies.add(reply.id);
    if (typeof reply.edits === 'string') return onEdit(reply);
    const liveReplyId = reply.liveReplyId;
    const state = liveReplyId ? live.get(liveReplyId) : undefined;
    if (liveReplyId) {
      finishedLiveReplies.add(liveReplyId);
      live.delete(liveReplyId);
    }
    // The final text wins over a live paint still waiting for its frame.
    if (state?.frame) cancelAnimationFrame(state.frame);
    if (historyIds.has(reply.replyId) || historyIds.has(liveReplyId)) {
      state?.el.remove();
      return;
    }
    if (state && isNotice(reply) && state.text.trim() !== '') {
      // A notice (e.g. "Stopped.") ends the stream: keep the text written so far, the notice comes after.
      renderInto(state.body, state.text, 'markdown');
      state.el.classList.remove('live', 'gap');
      state.el.classList.add('cut');
      append(decorate(bubble('assistant', reply.text, reply.format, reply.at), reply));
      return;
    }
    if (state) {
      renderInto(state.body, reply.text, reply.format);
      state.el.classList.remove('live', 'gap');
      stamp(state.el, reply.at);
      decorate(state.el, reply);
      return;
    }
    append(decorate(bubble('assistant', reply.text, reply.format, reply.at), reply));
  }

  /** SSE `delta`: seq 0 starts (or restarts) the live bubble of `liveReplyId`, the next seqs append. */
  function onDelta(delta) {
    const { liveReplyId, seq, text } = delta;
    if (typeof liveReplyId !== 'string' || typeof seq !== 'number' || typeof text !== 'string') return;
    if (finishedLiveReplies.has(liveReplyId) || historyIds.has(liveReplyId)) return;
    let state = live.get(liveReplyId);
    if (seq === 0) {
      state = state ?? startLive(liveReplyId);
      state.text = text;
      state.seq = 0;
      state.el.classList.remove('gap');
    } else if (!state || state.seq < 0 || seq <= state.seq) {
      return; // joined in the middle (the final message will come), or a repeat
    } else if (seq === state.seq + 1) {
      state.text += text;
      state.seq = seq;
    } else {
      state.el.classList.add('gap'); // a delta was lost: wait for a restart or the final reply
      state.seq = Number.POSITIVE_INFINITY;
      return;
    }
    paint(state);
  }

  /** The long poll's `partial`: the whole text so far of the open stream. */
  function onPartial(partial) {
    if (!partial || typeof partial.liveReplyId !== 'string' || typeof partial.text !== 'string') return;
    if (finishedLiveReplies.has(partial.liveReplyId) || historyIds.has(partial.liveReplyId)) return;
    const state = live.get(partial.liveReplyId) ?? startLive(partial.liveReplyId);
    state.text = partial.text;
    state.seq = -1; // a polled stream is not fed by deltas
    paint(state);
  }

  function startLive(liveReplyId) {
    const el = bubble('assistant', '', 'text', Date.now());
    el.classList.add('live');
    const state = { el, body: el.querySelector('.body'), text: '', seq: 0, frame: 0 };
    live.set(liveReplyId, state);
    append(el);
    return state;
  }

  function paint(state) {
    if (state.frame) return;
    state.frame = requestAnimationFrame(() => {
      state.frame = 0;
      const stick = nearBottom();
      renderInto(state.body, state.text, 'markdown');
      if (stick) toBottom();
    });
  }

  return {
    showHistory,
    onReply,
    onDelta,
    onPartial,
    /** The user's own message, shown at once; the returned bubble takes the send outcome. */
    addUser: (text, attachments) => append(bubble('user', text, 'text', Date.now(), attachments), true),
    /** Whether a reply is streaming right now. */
    streaming: () => live.size > 0,
    /** A line in the conversation that is not a message (e.g. history could not be read). */
    notice(text, action) {
      const el = document.createElement('div');
      el.className = 'notice';
      el.textContent = text;
      if (action) el.appendChild(action);
      list.prepend(el);
      return el;
    },
  };
}

/** A notice that ends a stream in place of its reply: its own reply id differs from the stream's (a reply's is the same). */
function isNotice(reply) {
  return typeof reply.replyId === 'string' && reply.replyId !== reply.liveReplyId;
}

/** Shows the time (from CSS, so the message's text stays its own) and the full date on hover. */
function stamp(el, at) {
  const date = new Date(typeof at === 'number' ? at : Date.now());
  const today = new Date().toDateString() === date.toDateString();
  const time = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  el.dataset.time = today ? time : date.toLocaleDateString([], { day: 'numeric', month: 'short' }) + ' ' + time;
  el.title = date.toLocaleString();
}

function attachmentList(attachments) {
  const ul = document.createElement('ul');
  ul.className = 'attachments';
  for (const a of attachments) {
    const li = document.createElement('li');
    li.textContent = a.fileName || a.kind;
    ul.appendChild(li);
  }
  return ul;
}
