/**
 * `npm run bench -- dead-worker` (only when named: it needs Redis at REDIS_URL and starts real
 * processes): a `chatgate worker` is SIGKILLed while its turn waits on the model; a second worker
 * runs beside it, every option at its default (heartbeat 15 s, lease 15 s, queue lock 30 s). Prints
 * how long after the kill the turn's reply was enqueued.
 */
import { once } from 'node:events';
import { createTurnProducer } from '../src/queue/producer.js';
import { startFakeOpenAI, type FakeReply } from '../test/fakes/openai-server.js';
import { spawnCliWorker, startModelsFront } from '../test/helpers/cli-worker.js';
import { collectOutbound, createTestRedis } from '../test/helpers/redis.js';
import { printTable } from './util.js';

const ROUNDS = 2;

/** Runs the dead-worker recovery benchmark and prints its table. */
export async function runDeadWorkerBench(): Promise<void> {
  const rows: string[][] = [];
  for (let round = 0; round < ROUNDS; round++) rows.push([String(round + 1), String(await oneRecovery(round))]);
  console.log('\nrecovery of a turn whose worker was SIGKILLed mid-call (defaults)');
  printTable(['round', 'reply enqueued after the kill (ms)'], rows);
}

async function oneRecovery(round: number): Promise<number> {
  const t = createTestRedis();
  let held = false;
  let onHeld = (): void => undefined;
  const heldCall = new Promise<void>((resolve) => { onHeld = resolve; });
  const fake = await startFakeOpenAI(() => {
    if (!held) {
      held = true;
      onHeld();
      return { hold: new Promise<FakeReply>(() => undefined) };
    }
    return { content: 'recovered' };
  });
  const front = await startModelsFront(fake.baseURL);
  const out = await collectOutbound(t);
  const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, ...t.names });
  const spawn = () => spawnCliWorker({ redisUrl: t.url, keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, baseURL: front.baseURL, env: {} });
  const victim = await spawn();
  const rescuer = await spawn();
  try {
    await producer.submitInbound({ id: `web:b${round}:1`, channel: 'web', chatId: `b${round}`, userId: 'u', userName: 'U', text: 'hi', attachments: [], receivedAt: Date.now() });
    await heldCall;
    const killedAt = Date.now();
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    await out.waitFor((replies) => replies.length > 0);
    return Date.now() - killedAt;
  } finally {
    rescuer.kill('SIGTERM');
    await once(rescuer, 'exit');
    await producer.close();
    await out.close();
    await front.close();
    await fake.close();
    await t.cleanup();
  }
}
