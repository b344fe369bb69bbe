/**
 * bench/storage: what chatgate keeps in Redis per message and per session, by the part that holds
 * it. A private redis-server, `chatgate gateway` and `chatgate worker` (bench/pipeline's process
 * starters, its 0-ms fake LLM and web chat client), then three phases: many sessions of one
 * message, few sessions of many messages (the two give bytes per session and per message by
 * solving two equations a part), and turns that fail for good (a worker against an endpoint that
 * answers 400: dead letters and failed jobs). Every key is sized with `MEMORY USAGE … SAMPLES 0`
 * and sorted by name into its part (bench/storage/parts.ts); `INFO memory` gives the whole. Last,
 * attachments, stored in-process (the web chat API takes no files). Sizes: STORAGE_SESSIONS
 * (default 400, phase 1), STORAGE_MESSAGES (default 2000 over 40 sessions, phase 2), STORAGE_FAILED
 * (default 100).
 */
import { randomBytes } from 'node:crypto';
import { storeAttachment } from '../src/redis/attachments.js';
import { startBenchLlm } from './pipeline/fake-llm.js';
import { createWebClient } from './pipeline/load.js';
import { roleEnv, startRole, type RoleProcess } from './pipeline/procs.js';
import { freePort, startBenchRedis, type BenchRedis } from './pipeline/redis.js';
import { startFailingLlm } from './storage/failing-llm.js';
import { difference, PARTS, takeCensus, type Census, type Part } from './storage/parts.js';
import { printTable } from './util.js';

const SESSIONS_ONE = Number(process.env.STORAGE_SESSIONS ?? 400);
const MESSAGES_MANY = Number(process.env.STORAGE_MESSAGES ?? 2000);
const SESSIONS_MANY = 40;
const FAILED = Number(process.env.STORAGE_FAILED ?? 100);
const ATTACHMENTS = 10;
/** File sizes of the attachment figures, bytes. */
const ATTACHMENT_SIZES = [10_000, 100_000, 1_000_000];
/** Parts kept by count (BullMQ `removeOnComplete: 1000` of turn jobs): no per-message figure past the cap. */
const COUNT_CAPPED: ReadonlySet<Part> = new Set(['completed turn jobs']);

/** What one phase added: its census difference, sessions, messages and `used_memory` growth. */
interface Phase {
  added: Census;
  sessions: number;
  messages: number;
  usedBytes: number;
}

export async function runStorageBench(): Promise<void> {
  const started = performance.now();
  const redis = await startBenchRedis();
  const llm = await startBenchLlm();
  const failing = await startFailingLlm();
  const tag = `bench-store-${process.pid}`;
  const [keyPrefix, queuePrefix] = [`${tag}:`, `{${tag}q}`];
  const port = await freePort();
  const env = roleEnv({ redisUrl: redis.url, llmUrl: llm.baseURL, tag, port, logLevel: 'warn' });
  const roles: RoleProcess[] = [];
  try {
    roles.push(await startRole('gateway', env), await startRole('worker', { ...env, CHATGATE_HTTP_PORT: '0' }));
    const client = createWebClient(`http://127.0.0.1:${port}`, tag);
    const measure = async (sessions: number, messages: number, run: () => Promise<unknown>): Promise<Phase & { census: Census }> => {
      const [before, usedBefore] = [await takeCensus(redis.admin, keyPrefix, queuePrefix), await usedMemory(redis)];
      await run();
      const census = await takeCensus(redis.admin, keyPrefix, queuePrefix);
      return { added: difference(census, before), census, sessions, messages, usedBytes: (await usedMemory(redis)) - usedBefore };
    };
    const one = await measure(SESSIONS_ONE, SESSIONS_ONE, async () => {
      for (let done = 0; done < SESSIONS_ONE; done += 100) await client.closedLoop(Math.min(100, SESSIONS_ONE - done), Math.min(100, SESSIONS_ONE - done));
    });
    const many = await measure(SESSIONS_MANY, MESSAGES_MANY, () => client.closedLoop(SESSIONS_MANY, MESSAGES_MANY));
    await roles.pop()!.stop();
    roles.push(await startRole('worker', { ...env, CHATGATE_HTTP_PORT: '0', OPENAI_BASE_URL: failing.baseURL }));
    const failed = await measure(FAILED, FAILED, () => client.closedLoop(Math.min(50, FAILED), FAILED));
    const attachments = await attachmentBytes(redis, keyPrefix);
    report(one, many, failed, attachments, (performance.now() - started) / 1000);
  } finally {
    for (const role of roles.reverse()) await role.stop().catch(() => undefined);
    await Promise.all([llm.close(), failing.close()]);
    await redis.close();
  }
}

/** Redis's `used_memory`, bytes. */
async function usedMemory(redis: BenchRedis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.admin.info('memory'))?.[1]);
}

/** Bytes Redis holds per stored attachment of each of {@link ATTACHMENT_SIZES} (mean of {@link ATTACHMENTS} files). */
async function attachmentBytes(redis: BenchRedis, keyPrefix: string): Promise<Array<{ size: number; held: number }>> {
  const out: Array<{ size: number; held: number }> = [];
  for (const size of ATTACHMENT_SIZES) {
    const before = await takeCensus(redis.admin, keyPrefix, '{none}');
    for (let i = 0; i < ATTACHMENTS; i++) await storeAttachment(redis.admin, `web:bench-att-${size}-${i}`, `a${i}-0`, randomBytes(size), { keyPrefix, ttlSeconds: 60 });
    out.push({ size, held: difference(await takeCensus(redis.admin, keyPrefix, '{none}'), before).get('attachments')!.bytes / ATTACHMENTS });
  }
  return out;
}

function report(one: Phase & { census: Census }, many: Phase & { census: Census }, failed: Phase & { census: Census }, attachments: Array<{ size: number; held: number }>, seconds: number): void {
  const f = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
  console.log(`\nstorage: private redis-server; phase 1 ${one.sessions} sessions × 1 message, phase 2 ${many.sessions} sessions × ${many.messages / many.sessions} messages, phase 3 ${failed.messages} turns failing for good (HTTP 400)`);
  console.log('Bytes are MEMORY USAGE (SAMPLES 0), Redis\'s per-key overhead included. Per message / per session: solved from phases 1 and 2 (two equations a part).\n');
  const det = one.sessions * many.messages - many.sessions * one.messages;
  printTable(['part', 'keys', 'bytes', 'bytes/key', 'per message', 'per session', 'per failed turn'], PARTS.map((part) => {
    const [a, b, c] = [one.added.get(part)!, many.added.get(part)!, failed.added.get(part)!];
    const total = failed.census.get(part)!;
    const perSession = (a.bytes * many.messages - b.bytes * one.messages) / det;
    const perMessage = (one.sessions * b.bytes - many.sessions * a.bytes) / det;
    const capped = COUNT_CAPPED.has(part);
    return [part, total.keys, total.bytes, total.keys > 0 ? f(total.bytes / total.keys) : '—', capped ? '(capped)' : f(perMessage), capped ? '—' : f(perSession), f(c.bytes / failed.messages)];
  }).filter((row) => row[1] !== 0 || row[6] !== '0'));
  const sum = (phase: Phase) => [...phase.added.values()].reduce((s, e) => s + e.bytes, 0);
  console.log(`\nSum of the parts: phase 1 ${f(sum(one) / one.messages)} B/message, phase 2 ${f(sum(many) / many.messages)} B/message; INFO used_memory grew ${f(one.usedBytes / one.messages)} and ${f(many.usedBytes / many.messages)} B/message (allocator and dictionary overhead included)`);
  console.log(`Attachments (one string a file, expiring after CHATGATE_ATTACHMENT_TTL_SECONDS): ${attachments.map((a) => `${a.size} B file → ${f(a.held)} B held (×${f(a.held / a.size, 2)})`).join(', ')}`);
  console.log(`(storage bench took ${f(seconds)} s)`);
}
