import { createTurnProducer, type TurnProducer, type TurnProducerOptions } from '../../src/queue/producer.js';
import { runWorker, type RunningWorker, type RunWorkerOptions, type WorkerDeps } from '../../workers/main.js';
import { startFakeOpenAI, type FakeHandler, type FakeOpenAI } from '../fakes/openai-server.js';
import { collectOutbound, createTestRedis, type OutboundCollector, type TestRedis } from './redis.js';

/** What {@link WorkerRig.start} takes: worker options on top of the rig's, and the worker's logger or tools. */
export type WorkerStartOptions = Partial<RunWorkerOptions> & Partial<Pick<WorkerDeps, 'logger' | 'tools'>>;

/** Real Redis with fresh prefixes, a fake LLM, a turn producer and an outbound collector: what an in-process worker runs against. */
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
  /** Closes the producer and opens one with `options` (on the rig's prefixes), e.g. `{ attempts: 2 }`. */
  replaceProducer(options: Omit<TurnProducerOptions, 'keyPrefix' | 'queuePrefix'>): Promise<TurnProducer>;
  /** Closes the worker, collector, producer and fake, and deletes the test's keys. */
  close(): Promise<void>;
}

/** Opens a {@link WorkerRig}; `handler` answers the fake's requests until a test sets another. */
export async function openWorkerRig(handler?: FakeHandler): Promise<WorkerRig> {
  const t = createTestRedis();
  const fake = await startFakeOpenAI(handler);
  const openProducer = (options: Omit<TurnProducerOptions, 'keyPrefix' | 'queuePrefix'> = {}) => createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, ...options });
  const rig: WorkerRig = {
    t, fake, producer: openProducer(), out: await collectOutbound(t), worker: null,
    async start({ logger, tools, ...options } = {}) {
      rig.worker = await runWorker({ redis: t.redis, logger, tools }, {
        keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, contextWindow: 16_000,
        llm: { baseURL: fake.baseURL, apiKey: 'test-key', model: 'gpt-4o-mini', retry: { baseDelayMs: 5, maxRetries: 2 } },
        ...options,
      });
      return rig.worker;
    },
    async replaceProducer(options) {
      await rig.producer.close();
      rig.producer = openProducer(options);
      return rig.producer;
    },
    async close() {
      await rig.worker?.close();
      await rig.out.close();
      await rig.producer.close();
      await fake.close();
      await t.cleanup();
    },
  };
  return rig;
}
