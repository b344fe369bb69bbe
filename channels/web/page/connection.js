// Receives the conversation's replies: SSE (EventSource resumes with Last-Event-ID after a drop),
// or long polling where EventSource is missing. The status it shows is what it observes: connected
// once the stream opened; reconnecting after an error; offline when reconnecting keeps failing, the
// stream was refused, or the browser says the network is gone.

const OFFLINE_AFTER_MS = 4000;
const OFFLINE_AFTER_ERRORS = 3;
const MAX_BACKOFF_MS = 30000;
const REOPEN_AFTER_HIDDEN_MS = 30000;

/**
 * Opens the reply stream at cursor `after`. `on` gets reply, delta, partial, typing and status
 * (`connected` | `reconnecting` | `offline`, with a text) callbacks.
 */
export function connect(base, after, on) {
  let cursor = after;
  const resume = () => encodeURIComponent(cursor);
  const onReply = (reply) => {
    if (reply && typeof reply.cursor === 'string') cursor = reply.cursor;
    on.reply(reply);
  };
  const parse = (handler) => (event) => {
    let data;
    try { data = JSON.parse(event.data); } catch { return; }
    handler(data);
  };
  if (!window.EventSource) return longPoll(base, { resume, set: (next) => { cursor = next; } }, onReply, on);

  let source;
  let errors = 0;
  let offlineTimer;
  let retryTimer;
  let backoffMs = 1000;
  const offline = (text) => {
    clearTimeout(offlineTimer);
    on.status('offline', text || 'offline — retrying');
  };
  const open = () => {
    clearTimeout(retryTimer);
    source?.close();
    source = new EventSource(base + '/events?after=' + resume());
    source.onopen = () => {
      errors = 0;
      backoffMs = 1000;
      clearTimeout(offlineTimer);
      on.status('connected', 'connected');
    };
    source.onerror = () => {
      errors++;
      if (source.readyState === EventSource.CLOSED) {
        // Refused (not a stream: 401, 403, 5xx): EventSource gives up, so we retry, slower each time.
        offline(navigator.onLine === false ? 'offline — no network' : 'offline — the gateway refused the stream; retrying');
        retryTimer = setTimeout(open, backoffMs);
        backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
        return;
      }
      if (errors >= OFFLINE_AFTER_ERRORS || navigator.onLine === false) return offline(navigator.onLine === false ? 'offline — no network' : 'offline — the gateway is not reachable; retrying');
      on.status('reconnecting', 'reconnecting…');
      clearTimeout(offlineTimer);
      offlineTimer = setTimeout(() => offline('offline — the gateway is not reachable; retrying'), OFFLINE_AFTER_MS);
    };
    source.addEventListener('message', parse(onReply));
    source.addEventListener('delta', parse(on.delta));
    source.addEventListener('typing', () => on.typing());
  };
  // A stream can die silently (a laptop asleep, a proxy dropping it): after the page was hidden a
  // while, open it again; it resumes from the last reply's cursor, so nothing is lost or repeated.
  let hiddenAt = 0;
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden') hiddenAt = Date.now();
    else if (hiddenAt && Date.now() - hiddenAt > REOPEN_AFTER_HIDDEN_MS) open();
  });
  window.addEventListener('offline', () => offline('offline — no network'));
  window.addEventListener('online', () => { if (!source || source.readyState !== EventSource.OPEN) open(); });
  open();
}

async function longPoll(base, cursor, onReply, on) {
  let failures = 0;
  for (;;) {
    try {
      const res = await fetch(base + '/messages?after=' + cursor.resume() + '&timeoutMs=25000');
      if (!res.ok) throw new Error('HTTP ' + res.status);
      const body = await res.json();
      failures = 0;
      on.status('connected', 'connected (polling)');
      const messages = body.messages || [];
      for (const reply of messages) onReply(reply);
      if (typeof body.next === 'string') cursor.set(body.next);
      if (body.partial) {
        on.partial(body.partial);
        // An open stream may answer at once: poll its growing text twice a second, not in a tight loop.
        if (messages.length === 0) await new Promise((resolve) => setTimeout(resolve, 500));
      }
    } catch {
      failures++;
      on.status(failures >= OFFLINE_AFTER_ERRORS ? 'offline' : 'reconnecting', failures >= OFFLINE_AFTER_ERRORS ? 'offline — retrying' : 'reconnecting…');
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000 * 2 ** failures, MAX_BACKOFF_MS)));
    }
  }
}
