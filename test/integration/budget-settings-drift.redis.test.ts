/**
 * Budget settings that differ between processes, on real Redis: two workers and a gateway beat
 * (their real heartbeat writers) with the digest of their settings; `chatgate budgets list` warns
 * on stderr and in --json when they differ among themselves or from its own, and `chatgate status`
 * has a `budgets` line, `warn` while they differ. A real `chatgate start` beats its environment's.
 */
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli.js';
import type { CliIo } from '../../src/cli/context.js';
import { NO_BUDGETS, type BudgetSettings } from '../../src/core/budget.js';
import { startGatewayHeartbeat } from '../../src/gateway/heartbeat.js';
import { createSilentLogger } from '../../src/log.js';
import { budgetSettingsDigest, HEARTBEAT_FORMAT, readHeartbeats, type Heartbeat } from '../../src/redis/heartbeats.js';
import { heartbeatKeys } from '../../src/redis/keys.js';
import { createWorkerHeartbeat, type WorkerHeartbeat } from '../../workers/heartbeat.js';
import { startDemo, stopChatgate } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

/** What `CHATGATE_BUDGET_USER_DAILY_USD=2` and `=5` configure. */
const TWO: BudgetSettings = { ...NO_BUDGETS, user: { day: { usd: 2 } } };
const FIVE: BudgetSettings = { ...NO_BUDGETS, user: { day: { usd: 5 } } };
const LLM = { model: 'm', summaryModel: 'm', contextWindow: 8192, demo: true };

describe('budget settings that differ between processes', () => {
  let t: TestRedis;
  const running: Array<WorkerHeartbeat | Heartbeat> = [];
  afterEach(async () => {
    for (const beat of running.splice(0)) await beat.stop();
    await t.cleanup();
  });

  const cli = async (args: string[], env: Record<string, string> = {}) => {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = { out: (text) => out.push(text), err: (text) => err.push(text), env: { ...t.env, CHATGATE_DEMO: 'true', CHATGATE_LOG_LEVEL: 'warn', ...env } };
    const code = await runCli(['node', 'chatgate', ...args], { io });
    return { code, stdout: out.join('\n'), stderr: err.join('\n') };
  };
  const worker = async (budgets: BudgetSettings) => {
    const beat = createWorkerHeartbeat({ redis: t.redis, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, ttlMs: 60_000, queue: 'turns', concurrency: 1, llm: LLM, budgets });
    await beat.start();
    running.push(beat);
    return beat;
  };

  it('budgets list and status name the processes that differ, and what to do', async () => {
    t = createTestRedis();
    const me = `${hostname()} pid ${process.pid}`;
    const [two, five] = [budgetSettingsDigest(TWO), budgetSettingsDigest(FIVE)];
    expect(two).not.toBe(five);
    await worker(TWO);
    const second = await worker(FIVE);
    running.push(await startGatewayHeartbeat({ redis: t.redis, logger: createSilentLogger() }, [], { state: 'starting' }, { keyPrefix: t.keyPrefix, ttlMs: 60_000, httpUrl: 'http://127.0.0.1:1', version: '0', budgets: TWO }));

    const listed = await cli(['budgets', 'list', '--json'], { CHATGATE_BUDGET_USER_DAILY_USD: '2' });
    expect(listed.code).toBe(0);
    const among = `the live gateways and workers enforce different limits: gateway ${me}, worker ${me} have budget settings ${two}; worker ${me} has budget settings ${five} (this command has budget settings ${two}). Start every gateway and worker with the same CHATGATE_BUDGET_* and CHATGATE_BUDGETS_FILE, and this command too`;
    expect(listed.stderr).toBe(`chatgate budgets: warning: ${among}`);
    const json = JSON.parse(listed.stdout) as { settings: { digest: string; live: Array<{ role: string; budgetDigest: string }> }; warning: string | null };
    expect(json.warning).toBe(among);
    expect(json.settings.digest).toBe(two);
    expect(json.settings.live.map((p) => `${p.role} ${p.budgetDigest}`).sort()).toEqual([`gateway ${two}`, `worker ${five}`, `worker ${two}`].sort());

    const status = await cli(['status']);
    expect(status.stdout).toContain(`warn  budgets   the live gateways and workers enforce different limits: gateway ${me}, worker ${me} have budget settings ${two}; worker ${me} has budget settings ${five}\n                fix: start every gateway and worker with the same CHATGATE_BUDGET_* and CHATGATE_BUDGETS_FILE`);

    // The odd one out stops: the rest agree, and a command with other settings (none) is told so.
    await second.stop();
    const other = await cli(['budgets', 'list']);
    expect(other.stderr).toBe(`chatgate budgets: warning: this command has budgets off (no limit set) but gateway ${me}, worker ${me} have budget settings ${two}: limits listed from \`environment\` or \`file\` are not the ones that hold. Run it with the workers' CHATGATE_BUDGET_* and CHATGATE_BUDGETS_FILE`);
    const same = await cli(['budgets', 'list', '--json'], { CHATGATE_BUDGET_USER_DAILY_USD: '2' });
    expect(same.stderr).toBe('');
    expect(JSON.parse(same.stdout)).toMatchObject({ warning: null });
    expect((await cli(['status'])).stdout).toContain(`ok    budgets   every live gateway and worker has budget settings ${two}`);
  });

  it('budgets list still lists beside a beat of another chatgate version, and says the settings are unknown', async () => {
    t = createTestRedis();
    await t.redis.hset(heartbeatKeys(t.keyPrefix).seen, 'worker:old:1:aaaaaa', JSON.stringify({ format: HEARTBEAT_FORMAT - 1, role: 'worker', id: 'old:1:aaaaaa', beatAt: Date.now() }));
    await t.redis.set(heartbeatKeys(t.keyPrefix).live('worker:old:1:aaaaaa'), '1', 'PX', 60_000);
    const listed = await cli(['budgets', 'list', '--json'], { CHATGATE_BUDGET_USER_DAILY_USD: '2' });
    expect(listed.code).toBe(0);
    expect(listed.stderr).toBe('chatgate budgets: warning: the budget settings of another chatgate version are unknown: 1 process beats heartbeat format 1 (another chatgate version): worker:old:1:aaaaaa; it is not shown: upgrade or stop it');
    expect(JSON.parse(listed.stdout)).toMatchObject({ limits: [], settings: { live: [] }, warning: expect.stringContaining('heartbeat format 1') });
  });

  it('a real `chatgate start` beats the digest of the settings its environment gives, as gateway and as worker', { timeout: 60_000 }, async () => {
    const demo = await startDemo({ CHATGATE_BUDGET_USER_DAILY_USD: '2' });
    t = demo.t; // afterEach deletes its keys
    try {
      const beats = (await readHeartbeats(demo.t.redis, { keyPrefix: demo.t.keyPrefix })).processes;
      expect(beats.map((b) => `${b.role} ${b.budgetDigest}`).sort()).toEqual([`gateway ${budgetSettingsDigest(TWO)}`, `worker ${budgetSettingsDigest(TWO)}`]);
    } finally {
      await stopChatgate(demo.proc);
    }
  });
});
