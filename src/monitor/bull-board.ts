import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queue } from 'bullmq';
import type { Hono } from 'hono';
import type { QueueDepth } from './metrics.js';

/** Where bull-board is mounted by default. */
export const QUEUES_BASE_PATH = '/admin/queues';

/**
 * The bull-board UI and API for the given BullMQ queues, as a hono sub-app to mount at `basePath`
 * (`app.route(basePath, board)`). Its static assets are served from the installed `@bull-board/ui`
 * with `@hono/node-server`'s serveStatic.
 */
export function createQueuesBoard(queues: readonly Queue[], basePath = QUEUES_BASE_PATH): Hono {
  const serverAdapter = new HonoAdapter(serveStatic);
  serverAdapter.setBasePath(basePath);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, boardName(queue, queues))),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'chatgate queues' } },
  });
  return serverAdapter.registerPlugin();
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
