/**
 * `npm run bench -- failover` (only when named: it needs Redis at REDIS_URL, default
 * redis://127.0.0.1:6379, and starts real processes): two `chatgate gateway --demo` processes with
 * the fake Telegram server and the default channel lease; the holder is stopped with SIGKILL, then
 * (again) with SIGTERM. Prints how long after the signal the standby held the lease and sent its
 * first getUpdates.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { readChannelLeases } from '../src/redis/channel-lease.js';
import { startFakeTelegram, type FakeTelegramServer } from '../test/fakes/telegram-server.js';
import { spawnChatgate, stopChatgate, type ChatgateProcess } from '../test/helpers/cli-process.js';
import { deleteMatching } from '../test/helpers/redis.js';
import { printTable } from './util.js';

const ROUNDS = 2;

/** Runs the fail-over benchmark and prints its table. */
export async function runFailoverBench(): Promise<void> {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redis = new Redis(url);
  const telegram = await startFakeTelegram();
  const id = randomUUID().slice(0, 8);
  const keyPrefix = `cgbench:${id}:`;
  const queuePrefix = `{cgbench${id}}`;
  const env = { REDIS_URL: url, CHATGATE_KEY_PREFIX: keyPrefix, CHATGATE_QUEUE_PREFIX: queuePrefix, CHATGATE_HTTP_PORT: '0', TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: telegram.apiRoot, CHATGATE_LOG_LEVEL: 'warn' };
  const rows: string[][] = [];
  try {
    for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
      for (let round = 0; round < ROUNDS; round++) rows.push([signal, ...(await oneFailover(redis, telegram, env, keyPrefix, signal))]);
    }
  } finally {
    await telegram.close();
    await deleteMatching(redis, `${keyPrefix}*`);
    await deleteMatching(redis, `${queuePrefix}*`);
    redis.disconnect();
  }
  console.log('\nfail-over of Telegram polling between two gateways (default lease, 10 s)');
  printTable(['signal', 'lease taken after (ms)', 'first poll after (ms)'], rows);
}

async function oneFailover(redis: Redis, telegram: FakeTelegramServer, env: Record<string, string>, keyPrefix: string, signal: 'SIGKILL' | 'SIGTERM'): Promise<string[]> {
  const start = async (): Promise<ChatgateProcess> => {
    const proc = spawnChatgate(['gateway', '--demo'], env);
    await proc.ready();
    return proc;
  };
  const holder = async (): Promise<string | undefined> => (await readChannelLeases(redis, keyPrefix))[0]?.holder;
  const until = async (condition: () => Promise<boolean> | boolean): Promise<void> => {
    while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  const a = await start();
  const b = await start();
  try {
    await until(async () => (await holder())?.endsWith(`:${a.child.pid}`) === true);
    await until(() => telegram.callsOf('getUpdates').length > 0);
    const signalledAt = Date.now();
    a.child.kill(signal);
    await until(async () => (await holder())?.endsWith(`:${b.child.pid}`) === true);
    const takenAt = Date.now();
    await until(() => telegram.callsOf('getUpdates').some((call) => call.atMs >= takenAt));
    const polledAt = telegram.callsOf('getUpdates').find((call) => call.atMs >= takenAt)!.atMs;
    return [String(takenAt - signalledAt), String(polledAt - signalledAt)];
  } finally {
    await stopChatgate(a);
    await stopChatgate(b);
  }
}
