import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queue } from 'bullmq';
import { Hono } from 'hono';
import type { QueueDepth } from './metrics.js';

/** Where bull-board is mounted by default. */
export const QUEUES_BASE_PATH = '/admin/queues';

/**
 * What bull-board's pages may load: its own files (and inline styles, which its UI sets), nothing
 * from another origin — an offline operator's visit neither fails on nor leaks to a CDN.
 */
const BOARD_CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'self'; frame-ancestors 'none'";
/** A `<link>` to a stylesheet of another origin (bull-board's page names Google Fonts): dropped, the system fonts serve. */
const EXTERNAL_LINK = /<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>/gi;

/**
 * The bull-board UI and API for the given BullMQ queues, as a hono sub-app to mount at `basePath`
 * (`app.route(basePath, board)`). Its static assets are served from the installed `@bull-board/ui`
 * with `@hono/node-server`'s serveStatic; its pages load nothing from another origin (see {@link BOARD_CSP}).
 */
export function createQueuesBoard(queues: readonly Queue[], basePath = QUEUES_BASE_PATH): Hono {
  const serverAdapter = new HonoAdapter(serveStatic);
  serverAdapter.setBasePath(basePath);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, boardName(queue, queues))),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'chatgate queues' } },
  });
  const app = new Hono();
  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set('Content-Security-Policy', BOARD_CSP);
    if (!c.res.headers.get('content-type')?.startsWith('text/html')) return;
    const html = (await c.res.text()).replace(EXTERNAL_LINK, '');
    const headers = new Headers(c.res.headers);
    headers.delete('content-length');
    c.res = new Response(html, { status: c.res.status, headers });
  });
  app.route('/', serverAdapter.registerPlugin());
  return app;
}

/** A sharded queue's shards share one name: bull-board tells them apart by their BullMQ prefix (`{cgq-3}:turns`). */
function boardName(queue: Queue, queues: readonly Queue[]): { prefix?: string } {
  const shared = queues.filter((q) => q.name === queue.name).length > 1;
  return shared ? { prefix: `${queue.opts.prefix ?? ''}:` } : {};
}

/**
 * Job counts of every queue by state: the default queue-depth source of `/metrics`. The shards of
 * a sharded queue (same name, other prefixes) are summed under the queue's name.
 */
export async function readQueueDepths(queues: readonly Queue[]): Promise<QueueDepth[]> {
  const depths = new Map<string, QueueDepth>();
  for (const queue of queues) {
    const counts = await queue.getJobCounts();
    for (const [state, count] of Object.entries(counts)) {
      const key = `${queue.name}\n${state}`;
      const depth = depths.get(key) ?? { queue: queue.name, state, count: 0 };
      depth.count += count;
      depths.set(key, depth);
    }
  }
  return [...depths.values()];
}
