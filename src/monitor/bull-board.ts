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
    queues: queues.map((queue) => new BullMQAdapter(queue)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'chatgate queues' } },
  });
  return serverAdapter.registerPlugin();
}

/** Job counts of every queue by state: the default queue-depth source of `/metrics`. */
export async function readQueueDepths(queues: readonly Queue[]): Promise<QueueDepth[]> {
  const depths: QueueDepth[] = [];
  for (const queue of queues) {
    const counts = await queue.getJobCounts();
    for (const [state, count] of Object.entries(counts)) depths.push({ queue: queue.name, state, count });
  }
  return depths;
}
