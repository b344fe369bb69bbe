// Buttons under a reply (an approval question: Approve, Always in this chat, Deny). A press posts the
// button's command to the gateway, which answers it in place: once the question is settled, the
// bubble shows the decision and its buttons go (the gateway also edits the stored reply, so every
// open page and every reload shows it); otherwise (not yours to decide, refused) a note says why.
import { NETWORK_REASON, reasonOf } from './composer.js';
import { renderInto } from './render.js';

/** Creates `press(reply, choice, el)`: posts one press of `choice` under `reply` (shown in `el`). */
export function createPresser(ctx) {
  return async function press(reply, choice, el) {
    const buttons = el.querySelectorAll('.choices button');
    buttons.forEach((b) => { b.disabled = true; });
    const body = { replyId: reply.id, command: choice.command, clientMessageId: ctx.randomId('p'), userId: ctx.userId };
    let res;
    try {
      res = await fetch(ctx.base + '/presses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    } catch {
      buttons.forEach((b) => { b.disabled = false; });
      return showNote(el, NETWORK_REASON.note.replace('Not sent', 'Not pressed'));
    }
    const answer = await res.json().catch(() => ({}));
    if (res.ok && answer.settled) return showDecided(el, reply.text + '\n\n' + answer.answer, reply.format);
    buttons.forEach((b) => { b.disabled = false; });
    showNote(el, res.ok ? String(answer.answer || '') : reasonOf(res.status, answer, res.headers.get('retry-after'), false).note.replace('Not sent', 'Not pressed'));
  };
}

/** Adds `reply`'s buttons to its bubble `el`; each press goes to `press`. */
export function renderChoices(el, reply, press) {
  el.querySelector('.choices')?.remove();
  if (!Array.isArray(reply.choices) || reply.choices.length === 0) return;
  const row = document.createElement('div');
  row.className = 'choices';
  for (const choice of reply.choices) {
    if (!choice || typeof choice.label !== 'string' || typeof choice.command !== 'string') continue;
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = choice.label;
    button.title = choice.command;
    if (/^\/deny\b/.test(choice.command)) button.className = 'deny';
    button.addEventListener('click', () => press(reply, choice, el));
    row.appendChild(button);
  }
  el.appendChild(row);
}

/** The question is settled: its new text, no buttons, no note. */
export function showDecided(el, text, format) {
  renderInto(el.querySelector('.body'), text, format);
  el.querySelector('.choices')?.remove();
  el.querySelector('.press-note')?.remove();
  el.classList.add('decided');
}

function showNote(el, text) {
  el.querySelector('.press-note')?.remove();
  const note = document.createElement('div');
  note.className = 'press-note';
  note.setAttribute('role', 'alert');
  note.textContent = text;
  el.appendChild(note);
}
