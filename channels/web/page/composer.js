// Sending: the user's message (with an optional file, as multipart) posted to the gateway; when it
// is not taken, the reason stays visible under the message with what the user can do — send again
// (transient: rate limit after its wait, gateway busy, network down) or edit (refused: too long,
// not allowed, a file type nothing reads). The text is never lost. A busy or unreachable gateway is
// tried again by itself a few times, with a countdown, before the page leaves it to the user.

/** What a failed post means for the user: the note to show, and whether/when sending again can work. */
export function reasonOf(status, body, retryAfterHeader, hadFile) {
  const error = body && typeof body.error === 'string' ? body.error : '';
  switch (status) {
    case 400: return { note: 'Not sent: ' + (error || 'the gateway did not understand the message.'), retry: false };
    case 401: return { note: 'Not sent: not signed in. Open this page once with ?token=<CHATGATE_MONITOR_TOKEN>.', retry: false };
    case 403: return { note: 'Not sent: ' + (error || 'you are not allowed to write here.'), retry: false };
    case 413: return { note: 'Not sent: ' + (error || (hadFile ? 'the file is too large.' : 'the message is too long.')), retry: false };
    case 415:
      if (body && body.refused === 'unsupported') return { note: 'Not sent: ' + error, retry: false };
      return { note: hadFile ? 'Not sent: this gateway does not accept file uploads (' + (error || 'unsupported') + ').' : 'Not sent: ' + (error || 'unsupported request.'), retry: false };
    case 429: {
      // A used-up budget: the reason says until when; the user may send again after it resets.
      if (body && body.refused === 'over_budget') return { note: 'Not sent: ' + error, retry: true };
      const ms = Number(body && body.retryAfterMs) || Number(retryAfterHeader) * 1000 || 5000;
      return { note: 'Not sent: ' + (error || 'too many messages.'), retry: true, retryAt: Date.now() + ms };
    }
    case 503: {
      const ms = Number(retryAfterHeader) * 1000 || undefined;
      return { note: 'Not sent: the gateway could not take it right now' + (error ? ' (' + error + ')' : '') + '.', retry: true, auto: true, ...(ms ? { retryAt: Date.now() + ms } : {}) };
    }
    default: return { note: 'Not sent: the gateway answered HTTP ' + status + (error ? ' (' + error + ')' : '') + '.', retry: status >= 500 };
  }
}

/** The network failed (gateway stopped, connection lost). */
export const NETWORK_REASON = { note: 'Not sent: the gateway cannot be reached (network down or gateway stopped).', retry: true, auto: true };

/** Waits before the automatic tries of a busy or unreachable gateway; after the last, the user decides. */
export const AUTO_RETRY_MS = [1000, 2000, 4000, 8000, 15000];

/**
 * Creates the sender. `ctx`: base URL, userId, randomId(prefix), timeline, onSending() (a post
 * starts), onAccepted(item) (the gateway took it), onFailed() (it was not taken), and edit(text, file) (puts a refused message back into the composer).
 */
export function createSender(ctx) {
  async function post(item) {
    ctx.onSending();
    let res;
    try {
      res = await fetch(ctx.base + '/messages', requestOf(item, ctx.userId));
    } catch {
      return showFailure(item, NETWORK_REASON);
    }
    const body = await res.json().catch(() => ({}));
    if (res.status === 202 || res.ok) {
      clearNote(item.el);
      ctx.onAccepted(item);
      return;
    }
    showFailure(item, reasonOf(res.status, body, res.headers.get('retry-after'), Boolean(item.file)));
  }

  function showFailure(item, reason) {
    ctx.onFailed();
    const tries = item.autoTries || 0;
    if (reason.auto && tries < AUTO_RETRY_MS.length) {
      // Transient: try again by itself (the same clientMessageId, so the gateway keeps one), saying when.
      item.autoTries = tries + 1;
      return showCountdown(item, reason, Math.max(AUTO_RETRY_MS[tries], (reason.retryAt || 0) - Date.now()));
    }
    const el = item.el;
    clearNote(el);
    el.classList.add('failed');
    const note = document.createElement('div');
    note.className = 'note';
    note.setAttribute('role', 'alert');
    const text = document.createElement('span');
    text.className = 'reason';
    text.textContent = reason.note;
    note.appendChild(text);
    if (reason.retry) note.appendChild(retryButton(item, reason.retryAt));
    else note.appendChild(action('Edit', 'edit', () => ctx.edit(item.text, item.file)));
    el.appendChild(note);
  }

  function showCountdown(item, reason, waitMs) {
    const el = item.el;
    clearNote(el);
    el.classList.add('failed', 'retrying');
    const note = document.createElement('div');
    note.className = 'note';
    note.setAttribute('role', 'status');
    const text = document.createElement('span');
    text.className = 'reason';
    note.appendChild(text);
    const at = Date.now() + waitMs;
    let timer;
    const now = action('Send now', 'retry', () => { clearTimeout(timer); post(item); });
    note.appendChild(now);
    el.appendChild(note);
    const tick = () => {
      const left = Math.ceil((at - Date.now()) / 1000);
      if (left <= 0) return post(item);
      text.textContent = reason.note.replace(/^Not sent:/, 'Not sent yet:') + ' Trying again in ' + left + ' s.';
      timer = setTimeout(tick, Math.min(1000, at - Date.now()));
    };
    tick();
  }

  function retryButton(item, retryAt) {
    const button = action('Send again', 'retry', () => {
      button.disabled = true;
      post(item);
    });
    if (retryAt && retryAt > Date.now()) {
      // Rate limited: say when it can work, and let it be sent then.
      button.disabled = true;
      const tick = () => {
        const left = Math.ceil((retryAt - Date.now()) / 1000);
        if (left <= 0) {
          button.disabled = false;
          button.textContent = 'Send again';
          return;
        }
        button.textContent = 'Send again in ' + left + ' s';
        setTimeout(tick, 1000);
      };
      tick();
    }
    return button;
  }

  return {
    /** Shows and posts a message (`file` optional); the same clientMessageId on every retry, so the gateway keeps one. */
    send(text, file) {
      const attachments = file ? [{ kind: 'file', fileName: file.name }] : undefined;
      const item = { text, file, clientMessageId: ctx.randomId('m'), el: ctx.timeline.addUser(text, attachments) };
      post(item);
    },
  };
}

function requestOf(item, userId) {
  if (!item.file) {
    return { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: item.text, clientMessageId: item.clientMessageId, userId }) };
  }
  const form = new FormData();
  if (item.text) form.append('text', item.text);
  form.append('clientMessageId', item.clientMessageId);
  form.append('userId', userId);
  form.append('file', item.file, item.file.name);
  return { method: 'POST', body: form };
}

function clearNote(el) {
  el.classList.remove('failed', 'retrying');
  el.querySelector('.note')?.remove();
}

function action(label, className, onClick) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = className;
  button.textContent = label;
  button.addEventListener('click', onClick);
  return button;
}
