import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';

/** A Hono app served on a free port: its base URL (`http://127.0.0.1:<port>`) and how to stop it. */
export interface ServedApp {
  base: string;
  /** Closes the server and its open connections (event streams included). */
  close(): Promise<void>;
}

/** Serves `app` on port 0 of `hostname` (default loopback), e.g. a monitor app for a browser test. */
export async function serveApp(app: { fetch: (request: Request) => Response | Promise<Response> }, hostname = '127.0.0.1'): Promise<ServedApp> {
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname }, () => resolve(s));
  });
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      (server as Server).closeAllConnections();
      await closed;
    },
  };
}

/** One server-sent event: its type (`message` when the stream names none), id and raw data. */
export interface SseEvent {
  event: string;
  id?: string;
  data: string;
}

/** Reads a real response's server-sent events until `done(events)` holds or the stream ends; comments and events without data are skipped. */
export async function readSseEvents(response: Response, done: (events: readonly SseEvent[]) => boolean): Promise<SseEvent[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: SseEvent[] = [];
  let buffer = '';
  while (!done(events)) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    buffer += value;
    for (let cut = buffer.indexOf('\n\n'); cut !== -1; cut = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const fields = new Map<string, string>();
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        if (colon <= 0) continue;
        fields.set(line.slice(0, colon), line.slice(colon + 1).replace(/^ /, ''));
      }
      const data = fields.get('data');
      if (data !== undefined) events.push({ event: fields.get('event') ?? 'message', ...(fields.has('id') ? { id: fields.get('id') } : {}), data });
    }
  }
  await reader.cancel();
  return events;
}
