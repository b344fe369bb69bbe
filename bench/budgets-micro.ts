/**
 * bench/budgets-micro: the budget ledger's own cost of one model call (reserve + settle), in
 * process, on a private redis-server: Node CPU µs a call (this process, ioredis included) and
 * Redis CPU µs a call (the server's threads, and the script's time from `INFO commandstats`).
 * `npx tsx bench/budgets-micro.ts`; sizes: MICRO_CALLS (default 20,000), MICRO_CONCURRENCY (20).
 * A limit at every level (user, chat, deployment; day and month), never reached, as in bench/budgets.
 * MICRO_GUARD=1 goes through the budget wrapper of a model client (src/budget/guard.ts) around a
 * client that answers at once, in a turn: the worker's whole budget work a call.
 */
import { guardLlm } from '../src/budget/guard.js';
import { createBudgetLedger } from '../src/budget/ledger.js';
import { NO_BUDGETS, type BudgetSettings } from '../src/core/budget.js';
import type { LlmClient } from '../src/llm/client.js';
import { createSilentLogger } from '../src/log.js';
import { cpuExactMs } from './pipeline/procs.js';
import { commandStats, resetStats, startBenchRedis } from './pipeline/redis.js';

const CALLS = Number(process.env.MICRO_CALLS ?? 20_000);
const CONCURRENCY = Number(process.env.MICRO_CONCURRENCY ?? 20);
const SESSIONS = 50;
const GUARD = process.env.MICRO_GUARD === '1';

const limit = { day: { usd: 1e6, tokens: 1e12 }, month: { usd: 1e7, tokens: 1e13 } };
const settings: BudgetSettings = { ...NO_BUDGETS, user: limit, chat: limit, deployment: limit };

const redis = await startBenchRedis();
try {
  const ledger = createBudgetLedger(redis.admin, { keyPrefix: `bench-micro-${process.pid}:`, settings });
  const client: LlmClient = { model: 'gpt-4o-mini', complete: () => Promise.resolve({ content: 'ok', usage: { promptTokens: 1200, completionTokens: 300, cachedTokens: 0 } }) as never };
  const guarded = guardLlm(client, { ledger, logger: createSilentLogger() }, { settings, defaultMaxTokens: 1000 });
  const call = GUARD
    ? async (k: number) => {
      const turn = { usedMicro: 0, usedTokens: 0, onNotice: () => undefined } as { usedMicro: number; usedTokens: number; onNotice: () => void; settling?: Promise<void> };
      await guarded.complete({ messages: [{ role: 'user', content: 'hi' }], promptTokens: 1200, scope: { user: `web:u${k % SESSIONS}`, chat: `web:c${k % SESSIONS}`, turn } });
      await turn.settling;
    }
    : async (k: number) => {
      const scope = { user: `web:u${k % SESSIONS}`, chat: `web:c${k % SESSIONS}` };
      const r = await ledger.reserve(scope, { micro: 3000, tokens: 5000 });
      if (!('id' in r)) throw new Error('refused');
      await ledger.settle(scope, r.id, { micro: 1200, tokens: 2500 });
    };
  const run = async (calls: number) => {
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < calls) await call(next++);
    }));
  };
  await run(2000); // warm-up: JIT, the script loaded, the month's copy made
  await resetStats(redis.admin);
  const node0 = process.cpuUsage();
  const redis0 = cpuExactMs(redis.pid!);
  await run(CALLS);
  const node = process.cpuUsage(node0);
  const redisMs = cpuExactMs(redis.pid!) - redis0;
  const stats = await commandStats(redis.admin);
  const script = stats.filter((s) => s.command === 'evalsha' || s.command === 'eval').reduce((sum, s) => sum + s.usec, 0);
  const commands = stats.filter((s) => !s.command.startsWith('config') && !s.command.startsWith('info')).map((s) => `${s.command} ${(s.calls / CALLS).toFixed(2)} (${(s.usec / s.calls).toFixed(1)} µs each)`).join(', ');
  console.log(`budgets-micro: ${CALLS} calls (${GUARD ? 'through the guard' : 'reserve + settle'}), ${CONCURRENCY} at once, 3 levels × 2 periods with limits`);
  console.log(`Node CPU µs a call: ${(((node.user + node.system) / CALLS)).toFixed(1)}`);
  console.log(`Redis CPU µs a call: ${((redisMs * 1000) / CALLS).toFixed(1)} (scripts' own time: ${(script / CALLS).toFixed(1)})`);
  console.log(`Redis commands a call: ${commands}`);
} finally {
  await redis.close();
}
