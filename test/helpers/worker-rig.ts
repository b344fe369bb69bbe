import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { openShardedQueue } from '../../src/queue/sharded.js';
import { createTurnProducer, type TurnProducer, type TurnProducerOptions } from '../../src/queue/producer.js';
import { runWorker, type RunningWorker, type RunWorkerOptions, type WorkerDeps } from '../../workers/main.js';
import { startFakeOpenAI, type FakeHandler, type FakeOpenAI } from '../fakes/openai-server.js';
import { spawnCliWorker, spawnEffectWorker, startModelsFront } from './cli-worker.js';
import { collectOutbound, createTestRedis, type OutboundCollector, type TestRedis } from './redis.js';
import { pollUntil } from './waits.js';

/** `chatgate worker` env for crash tests: 4 turns at once, a 1.5 s lease and job lock (a dead worker's turn moves on soon). */
export const FAST_LEASES: Readonly<Record<string, string>> = { CHATGATE_WORKER_CONCURRENCY: '4', CHATGATE_LEASE_TTL_MS: '1500', CHATGATE_TURN_LOCK_MS: '1500' };

/** What {@link WorkerRig.start} takes: worker options on top of the rig's, and the worker's logger or tools. */
export type WorkerStartOptions = Partial<RunWorkerOptions> & Partial<Pick<WorkerDeps, 'logger' | 'tools'>>;

/**
 * Real Redis with fresh prefixes, a fake LLM, a turn producer and an outbound collector: what a
 * worker runs against, in this process ({@link WorkerRig.start}) or as child processes ({@link WorkerRig.track}).
 * Queues are split into `t.queueShards` shards (the `shards` vitest project sets 4).
 */
export interface WorkerRig {
  t: TestRedis;
  fake: FakeOpenAI;
  producer: TurnProducer;
  out: OutboundCollector;
  /** The worker the last {@link WorkerRig.start} started, or null. */
  worker: RunningWorker | null;
  /**
   * Starts `runWorker` on the rig's Redis and fake with a 16,000-token window, model calls retried
   * after 5 ms at most twice, and `options` on top (`llm` replaces the whole LLM block).
   */
  start(options?: WorkerStartOptions): Promise<RunningWorker>;
  /** Child processes the test started; {@link WorkerRig.close} stops the ones still running (SIGTERM) and waits for them. */
  track(child: ChildProcess): ChildProcess;
  /**
   * Starts `chatgate worker` as a tracked child process on the rig's Redis and fake (behind a
   * `/models` front opened on first use), with `env` on top; resolves once it has started.
   */
  spawnCliWorker(env?: Readonly<Record<string, string>>): Promise<ChildProcess>;
  /** Starts test/helpers/effect-worker.ts as a tracked child process on the rig's Redis and fake, with `env` on top. */
  spawnEffectWorker(env?: Readonly<Record<string, string>>): Promise<ChildProcess>;
  /** Resolves once a process pushes to `<keyPrefix>signal:<name>` (the effect worker's `book-started`). */
  signal(name: string): Promise<void>;
  /** Resolves once the turns queue has no active, waiting, delayed or prioritized job. */
  turnsDrained(timeoutMs?: number): Promise<void>;
  /** Closes the producer and opens one with `options` (on the rig's prefixes), e.g. `{ attempts: 2 }`. */
  replaceProducer(options: Omit<TurnProducerOptions, 'keyPrefix' | 'queuePrefix'>): Promise<TurnProducer>;
  /** Stops the tracked processes, closes the worker, collector, producer and fake, and deletes the test's keys. */
  close(): Promise<void>;
}

/** Opens a {@link WorkerRig}; `handler` answers the fake's requests until a test sets another. */
export async function openWorkerRig(handler?: FakeHandler): Promise<WorkerRig> {
  const t = createTestRedis();
  const fake = await startFakeOpenAI(handler);
  const children: ChildProcess[] = [];
  let front: Promise<{ baseURL: string; close(): Promise<void> }> | undefined;
  const openProducer = (options: Omit<TurnProducerOptions, 'keyPrefix' | 'queuePrefix'> = {}) => createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, ...t.names, ...options });
  const rig: WorkerRig = {
    t, fake, producer: openProducer(), out: await collectOutbound(t), worker: null,
    async start({ logger, tools, ...options } = {}) {
      rig.worker = await runWorker({ redis: t.redis, logger, tools }, {
        keyPrefix: t.keyPrefix, ...t.names, contextWindow: 16_000,
        llm: { baseURL: fake.baseURL, apiKey: 'test-key', model: 'gpt-4o-mini', retry: { baseDelayMs: 5, maxRetries: 2 } },
        ...options,
      });
      return rig.worker;
    },
    track(child) {
      children.push(child);
      return child;
    },
    async spawnCliWorker(env = {}) {
      front ??= startModelsFront(fake.baseURL);
      const { baseURL } = await front;
      return rig.track(await spawnCliWorker({ redisUrl: t.url, keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, baseURL, env }));
    },
    async spawnEffectWorker(env = {}) {
      return rig.track(await spawnEffectWorker({ redisUrl: t.url, keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, queueShards: t.queueShards, baseURL: fake.baseURL, env }));
    },
    async signal(name) {
      const signals = t.redis.duplicate();
      await signals.blpop(`${t.keyPrefix}signal:${name}`, 0);
      signals.disconnect();
    },
    async turnsDrained(timeoutMs = 30_000) {
      const turns = openShardedQueue('turns', t.names, t.redis);
      await pollUntil(async () => Object.values(await turns.getJobCounts('active', 'waiting', 'delayed', 'prioritized')).every((n) => n === 0),
        { intervalMs: 50, timeoutMs, what: 'the turns queue drained' });
      await turns.close();
    },
    async replaceProducer(options) {
      await rig.producer.close();
      rig.producer = openProducer(options);
      return rig.producer;
    },
    async close() {
      await Promise.all(children.splice(0).map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        await once(child, 'exit');
      }));
      await rig.worker?.close();
      await (await front)?.close();
      await rig.out.close();
      await rig.producer.close();
      await fake.close();
      await t.cleanup();
    },
  };
  return rig;
}
