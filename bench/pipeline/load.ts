/**
 * The web chat client of bench/pipeline: posts messages through `POST /api/chat/:id/messages` and
 * sees each reply delivered by the page's own long poll (`GET /api/chat/:id/messages?after=`).
 * Closed loop (every session posts its next message when its reply arrived) for the peak; open
 * loop (a fixed arrival rate, each message on a session with nothing in flight) for latency.
 * Sessions are spread over several loopback source addresses, so the per-address rate limit of the
 * web chat (which stays on) is not what the bench measures.
 */
import { Agent, request } from 'node:http';

/** Idle kept-alive sockets close after 3 s, before the gateway's 5 s keep-alive timeout would close them under a request. */
const agent = new Agent({ keepAlive: true, maxSockets: Infinity, timeout: 3000 });
/** Loopback source addresses the sessions are spread over (127.0.0.2 …). */
const ADDRESSES = 32;

/** One conversation of the bench: its id, source address and reply cursor. */
interface Session {
  id: string;
  address: string;
  cursor?: string;
  sent: number;
}

/** What a load phase measured. */
export interface LoadResult {
  messages: number;
  seconds: number;
  /** Post → reply delivered, ms, one per message. */
  latencies: number[];
  /** Posts the gateway refused or could not take (not 202). */
  refused: number;
}

/** A client of the gateway at `baseUrl`; session ids start with `tag`. */
export function createWebClient(baseUrl: string, tag: string) {
  const url = new URL(baseUrl);
  let created = 0;
  const newSession = (): Session => {
    const n = created++;
    return { id: `${tag}-${n}`, address: `127.0.0.${2 + (n % ADDRESSES)}`, sent: 0 };
  };

  /** Posts one message and waits for its reply. @returns post → reply ms, or null when refused. */
  const exchange = async (session: Session): Promise<number | null> => {
    const started = performance.now();
    const post = await call(url, session.address, 'POST', `/api/chat/${session.id}/messages`, JSON.stringify({ text: `hello ${session.sent}`, clientMessageId: `m${session.sent}` }));
    session.sent++;
    if (post.status !== 202) {
      const key = `${post.status} ${post.body.slice(0, 120)}`;
      refusals.set(key, (refusals.get(key) ?? 0) + 1);
      return null;
    }
    for (;;) {
      const after = session.cursor ? `&after=${session.cursor}` : '';
      const poll = await call(url, session.address, 'GET', `/api/chat/${session.id}/messages?timeoutMs=30000${after}`);
      if (poll.status !== 200) throw new Error(`long poll answered ${poll.status}: ${poll.body}`);
      const page = JSON.parse(poll.body) as { messages: unknown[]; next: string };
      session.cursor = page.next;
      if (page.messages.length > 0) return performance.now() - started;
    }
  };

  return {
    /** `sessions` sessions, each posting its next message as soon as its reply arrived, `messages` in all. */
    async closedLoop(sessions: number, messages: number): Promise<LoadResult> {
      const pool = Array.from({ length: sessions }, newSession);
      const latencies: number[] = [];
      let posted = 0;
      let refused = 0;
      const started = performance.now();
      await Promise.all(pool.map(async (session) => {
        while (posted < messages) {
          posted++;
          const ms = await exchange(session);
          if (ms === null) refused++;
          else latencies.push(ms);
        }
      }));
      return { messages: latencies.length, seconds: (performance.now() - started) / 1000, latencies, refused };
    },

    /** `perSecond` arrivals a second for `seconds`, each on a session with nothing in flight. */
    async openLoop(perSecond: number, seconds: number): Promise<LoadResult> {
      const idle: Session[] = [];
      const latencies: number[] = [];
      const inFlight: Array<Promise<void>> = [];
      let refused = 0;
      const total = Math.round(perSecond * seconds);
      const started = performance.now();
      for (let i = 0; i < total; i++) {
        const due = started + (i * 1000) / perSecond;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
        const session = idle.pop() ?? newSession();
        inFlight.push(exchange(session).then((ms) => {
          if (ms === null) refused++;
          else latencies.push(ms);
          idle.push(session);
        }));
      }
      await Promise.all(inFlight);
      return { messages: latencies.length, seconds: (performance.now() - started) / 1000, latencies, refused };
    },
  };
}

/** Requests sent again after a connection reset, by whether the socket was a kept-alive one. */
export const resets = { reused: 0, fresh: 0 };
/** Posts the gateway did not take, by HTTP status and the start of its answer. */
export const refusals = new Map<string, number>();

/**
 * One request. A kept-alive socket the server closed as it went idle (its keep-alive timeout)
 * fails with ECONNRESET when reused at that moment: such a request is sent again (three tries in
 * all), as Node's documentation advises (posts carry a clientMessageId, so a repeat is deduped,
 * and a long poll is a read). A reset of a fresh socket is sent again too, and counted apart.
 */
async function call(base: URL, localAddress: string, method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send(base, localAddress, method, path, body);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET' || attempt === 3) throw err;
      if ((err as { reusedSocket?: boolean }).reusedSocket) resets.reused++;
      else resets.fresh++;
    }
  }
}

function send(base: URL, localAddress: string, method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    const req = request({ host: base.hostname, port: base.port, method, path, headers, agent, localAddress }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', (err) => reject(Object.assign(err, { reusedSocket: req.reusedSocket })));
    req.end(body);
  });
}
