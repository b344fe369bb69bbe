import { DEFAULT_DISCORD_API_ROOT, DEFAULT_TELEGRAM_API_ROOT } from '../core/inbound.js';
import type { Config } from '../config.js';
import { resolveQueueNames } from '../queue/names.js';
import { openShardedQueue } from '../queue/sharded.js';
import { openOutboundQueue } from '../outbound/outbound-queue.js';
import type { RedisClient } from '../redis/client.js';
import { noWorkerReason, START_A_WORKER } from '../gateway/heartbeat.js';
import { describeForeignBeats, gatewayChannelRows, HEARTBEAT_FORMAT, readHeartbeats, type ForeignBeat, type HeartbeatStatus } from '../redis/heartbeats.js';
import { judgeChannels } from '../gateway/channel-health.js';
import { CliExit, commandLogger, connectRedis, errorText, EXIT, loadCliConfig, warnMisspeltOptions, type CliIo, type CliRedis } from './context.js';
import { describeDeployment, withDeploymentLlm, type CommandConfig } from './deployment.js';
import { LLM_HELP, probeCompletion, probeModels } from './llm-check.js';
import { judgeMcpServers } from './mcp-check.js';

/** Options of `chatgate doctor` (API roots are options so a proxy, a local Bot API server or a test fake can stand in). */
export interface DoctorOptions {
  /** Telegram Bot API root. Default TELEGRAM_API_ROOT (`https://api.telegram.org`). */
  telegramApiRoot?: string;
  /** Discord REST root, with or without the version (`/v10` is added when missing). Default DISCORD_API_ROOT (`https://discord.com/api`). */
  discordApiRoot?: string;
  /** Timeout of one remote check, ms. Default 5000. */
  timeoutMs?: number;
  /** Print `{ ok, checks: [{ name, status, detail, fix? }] }` as JSON instead of lines. */
  json?: boolean;
}

/** One check's verdict. */
interface Verdict {
  status: 'ok' | 'FAIL' | 'skip';
  detail: string;
  /** What to do about a failure. */
  fix?: string;
}

const DEFAULTS = { telegramApiRoot: DEFAULT_TELEGRAM_API_ROOT, discordApiRoot: DEFAULT_DISCORD_API_ROOT, timeoutMs: 5000 };
const DISCORD_API_VERSION = 'v10';
const MIN_REDIS = [6, 2] as const;

/**
 * `chatgate doctor`: configuration, Redis (reachable, version ≥ 6.2), queues, live workers, the LLM
 * endpoint and model, and bot tokens — one line each, `ok`, `skip` or `FAIL` with a fix (or one JSON
 * object with `json`). @returns 1 when any failed.
 */
export async function doctorCommand(io: CliIo, options: DoctorOptions = {}): Promise<number> {
  const checks: Array<Verdict & { name: string }> = [];
  const report = (name: string, verdict: Verdict) => {
    checks.push({ name, ...verdict });
    if (!options.json) io.out(`${verdict.status.padEnd(4)}  ${name.padEnd(9)} ${verdict.detail}${verdict.fix ? `\n                fix: ${verdict.fix}` : ''}`);
  };
  const finish = () => {
    const failed = checks.some((check) => check.status === 'FAIL');
    if (options.json) io.out(JSON.stringify({ ok: !failed, checks }, null, 2));
    else io.out(failed ? 'Some checks failed; fix them and run `chatgate doctor` again.' : 'All checks passed.');
    return failed ? EXIT.failure : EXIT.ok;
  };
  let config: Config;
  try {
    warnMisspeltOptions(io);
    config = loadCliConfig(io);
  } catch (err) {
    if (!(err instanceof CliExit)) throw err;
    report('config', { status: 'FAIL', detail: 'invalid (see the lines above)', fix: 'correct the named options; every option is listed in docs/operating.md' });
    return finish();
  }
  const o = {
    timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    telegramApiRoot: options.telegramApiRoot ?? config.telegram?.apiRoot ?? DEFAULTS.telegramApiRoot,
    discordApiRoot: versionedDiscordRoot(options.discordApiRoot ?? config.discord?.apiRoot ?? DEFAULTS.discordApiRoot),
  };
  const redis = await openRedis(io, config);
  try {
    const used = withDeploymentLlm(config, io.env, redis.beats);
    report('config', configVerdict(used));
    if (redis.conn && redis.failure === undefined) await redisChecks(redis.conn, used.config, redis.beats, report, redis.foreign);
    else reportNoRedis(config, redis.failure, report);
    report('llm', await checkLlm(used));
  } finally {
    await redis.conn?.close();
  }
  report('telegram', await checkTelegram(config, o.telegramApiRoot, o.timeoutMs));
  report('discord', await checkDiscord(config, o.discordApiRoot, o.timeoutMs));
  return finish();
}

/** Redis and the heartbeats on it (this version's, and the live ones of another: `foreign`); `failure` when either could not be had. */
async function openRedis(io: CliIo, config: Config): Promise<{ conn: CliRedis | null; beats: HeartbeatStatus[]; foreign: ForeignBeat[]; failure?: unknown }> {
  let conn: CliRedis | null = null;
  try {
    conn = await connectRedis(io, config, commandLogger());
    const { processes, foreign } = await readHeartbeats(conn.redis, { keyPrefix: config.redis.keyPrefix });
    return { conn, beats: processes, foreign };
  } catch (err) {
    return { conn, beats: [], foreign: [], failure: err };
  }
}

/** The configuration's line: valid, with the LLM settings in use and where they come from. */
function configVerdict({ config, deployment }: CommandConfig): Verdict {
  const file = config.configFile ? `, file ${config.configFile}` : '';
  const llm = `model ${config.llm.model}, context window ${config.llm.contextWindow} tokens`;
  if (deployment) return { status: 'ok', detail: `valid; the LLM settings are the running deployment's, as ${describeDeployment(deployment)} records them: ${llm}${file}` };
  return { status: 'ok', detail: `valid: ${llm} (${config.llm.contextWindowSource})${file}` };
}

/** Redis, the queues and the workers (a gateway without live workers leaves messages waiting forever). */
async function redisChecks(conn: CliRedis, config: Config, beats: readonly HeartbeatStatus[], report: (name: string, verdict: Verdict) => void, foreign: readonly ForeignBeat[]): Promise<void> {
  try {
    report('redis', await checkRedis(conn));
    report('queues', await checkQueues(conn.redis, config));
    report('workers', checkWorkers(beats));
    const mcp = judgeMcpServers(config, beats);
    if (mcp) report('mcp', { ...mcp, status: mcp.status === 'warn' ? 'FAIL' : mcp.status });
    report('channels', checkChannels(beats));
    // Another chatgate version on the prefix: `chatgate status` warns; here, as with mcp, a warning fails.
    if (foreign.length > 0) report('versions', { status: 'FAIL', detail: describeForeignBeats(foreign), fix: `run one chatgate version per key prefix (this one beats heartbeat format ${HEARTBEAT_FORMAT})` });
  } catch (err) {
    reportNoRedis(config, err, report);
  }
}

/** The Redis line when Redis cannot be used, and the lines that need it skipped. */
function reportNoRedis(config: Config, err: unknown, report: (name: string, verdict: Verdict) => void): void {
  report('redis', { status: 'FAIL', detail: err instanceof CliExit ? 'not available (see above)' : errorText(err), fix: config.redis.clusterNodes ? 'set REDIS_CLUSTER_NODES to nodes of a reachable, ready Redis Cluster (Redis ≥ 6.2)' : 'set REDIS_URL to a reachable Redis ≥ 6.2, or install redis-server' });
  report('queues', { status: 'skip', detail: 'needs Redis' });
  report('workers', { status: 'skip', detail: 'needs Redis' });
  report('channels', { status: 'skip', detail: 'needs Redis' });
}

/** Live workers by their heartbeats: FAIL when a gateway runs without any (its messages would wait forever). */
function checkWorkers(beats: readonly HeartbeatStatus[]): Verdict {
  const workers = beats.filter((beat) => beat.role === 'worker');
  const live = workers.filter((beat) => beat.alive);
  const gateways = beats.filter((beat) => beat.role === 'gateway' && beat.alive);
  if (live.length > 0) return { status: 'ok', detail: `${live.length} alive (${live.map((w) => `${w.host} pid ${w.pid}`).join(', ')})` };
  if (gateways.length > 0) return { status: 'FAIL', detail: `a gateway runs (${gateways[0]!.host} pid ${gateways[0]!.pid}) but ${noWorkerReason(workers)}`, fix: START_A_WORKER };
  return { status: 'skip', detail: 'no gateway or worker is running (`chatgate status` shows what runs)' };
}

/** The running gateways' channels by their heartbeats, judged as `chatgate status` does: FAIL when one is not connected. */
function checkChannels(beats: readonly HeartbeatStatus[]): Verdict {
  const live = beats.filter((beat) => beat.role === 'gateway' && beat.alive);
  const verdict = judgeChannels(gatewayChannelRows(live), live.length);
  return { ...verdict, status: verdict.status === 'down' ? 'FAIL' : verdict.status };
}

/** The REST root with the API version discord.js adds itself (`https://discord.com/api` → `…/api/v10`). */
function versionedDiscordRoot(root: string): string {
  const trimmed = root.replace(/\/+$/, '');
  return /\/v\d+$/.test(trimmed) ? trimmed : `${trimmed}/${DISCORD_API_VERSION}`;
}

async function checkRedis(conn: CliRedis): Promise<Verdict> {
  const info = await conn.redis.info('server');
  const version = /redis_version:([\d.]+)/.exec(info)?.[1] ?? '0';
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const where = `${conn.resolved.url.replace(/\/\/[^@/]*@/, '//***@')} (${conn.resolved.source})`;
  if (major < MIN_REDIS[0] || (major === MIN_REDIS[0] && minor < MIN_REDIS[1])) {
    return { status: 'FAIL', detail: `Redis ${version} at ${where} is too old`, fix: 'use Redis 6.2 or newer (BullMQ and the session scripts need it)' };
  }
  return { status: 'ok', detail: `Redis ${version} at ${where}` };
}

async function checkQueues(redis: RedisClient, config: Config): Promise<Verdict> {
  const names = resolveQueueNames({ queuePrefix: config.redis.queuePrefix, queueShards: config.redis.queueShards });
  const turns = openShardedQueue<{ sessionId: string }>(names.turnQueue, names, redis);
  turns.onError(() => undefined); // failures surface where its commands fail
  try {
    // The turn queue's BullMQ counts and the outbound streams' counts, in one shape.
    const counts: Array<[string, Record<string, number>]> = [
      [names.turnQueue, await turns.getJobCounts('waiting', 'active', 'delayed', 'failed')],
      [names.outboundQueue, { ...await openOutboundQueue(redis, names).counts() }],
    ];
    const parts = counts.map(([name, c]) => `${name}: ${c.waiting} waiting, ${c.active} active, ${c.delayed} delayed, ${c.failed} failed`);
    return { status: 'ok', detail: `${parts.join('; ')} (prefix ${names.queuePrefix}${names.queueShards > 1 ? `, ${names.queueShards} shards` : ''})` };
  } finally {
    await turns.close();
  }
}

/** The LLM endpoint and model in use: the built-in demo model started here in demo mode. */
async function checkLlm({ config, deployment }: CommandConfig): Promise<Verdict> {
  // Loaded on use: the demo model brings the tokenizer, which a doctor without it never needs.
  const demo = config.demo ? await (await import('../llm/demo-model.js')).startDemoModel({ model: config.llm.model }) : null;
  try {
    const llm = demo ? { ...config.llm, baseUrl: demo.baseUrl } : config.llm;
    const whose = deployment ? `; the LLM ${describeDeployment(deployment)} uses` : '';
    const models = await probeModels(llm);
    if (!models.ok) return { status: 'FAIL', detail: `${models.detail}${whose}`, fix: LLM_HELP };
    const completion = await probeCompletion(llm);
    if (!completion.ok) return { status: 'FAIL', detail: `${models.detail}, but ${completion.detail}${whose}`, fix: LLM_HELP };
    return { status: 'ok', detail: `${demo ? 'built-in demo model: ' : ''}${models.detail}; ${completion.detail}${whose}` };
  } finally {
    await demo?.close();
  }
}

async function checkTelegram(config: Config, apiRoot: string, timeoutMs: number): Promise<Verdict> {
  if (!config.telegram) return { status: 'skip', detail: 'TELEGRAM_BOT_TOKEN not set (Telegram channel off)' };
  // The URL holds the token: never print it.
  const result = await getJson(`${apiRoot.replace(/\/+$/, '')}/bot${config.telegram.token}/getMe`, {}, timeoutMs);
  const body = result.body as { ok?: boolean; result?: { username?: string }; description?: string } | null;
  if (result.status === 200 && body?.ok) return { status: 'ok', detail: `token valid: bot @${body.result?.username ?? '?'}` };
  if (result.status === 401 || result.status === 404) return { status: 'FAIL', detail: `TELEGRAM_BOT_TOKEN was rejected (HTTP ${result.status}${body?.description ? `: ${body.description}` : ''})`, fix: 'copy the token again from @BotFather (/mybots → API Token)' };
  return { status: 'FAIL', detail: `Telegram Bot API did not confirm the token (${result.error ?? `HTTP ${result.status}`})`, fix: 'check the network connection to api.telegram.org' };
}

async function checkDiscord(config: Config, apiRoot: string, timeoutMs: number): Promise<Verdict> {
  if (!config.discord) return { status: 'skip', detail: 'DISCORD_BOT_TOKEN not set (Discord channel off)' };
  const result = await getJson(`${apiRoot.replace(/\/+$/, '')}/users/@me`, { authorization: `Bot ${config.discord.token}` }, timeoutMs);
  const body = result.body as { username?: string; bot?: boolean } | null;
  if (result.status === 200 && body?.username) return { status: 'ok', detail: `token valid: ${body.bot === false ? 'user' : 'bot'} ${body.username}` };
  if (result.status === 401) return { status: 'FAIL', detail: 'DISCORD_BOT_TOKEN was rejected (HTTP 401)', fix: 'reset the token in the Discord developer portal (Bot → Reset Token) and set it again' };
  return { status: 'FAIL', detail: `Discord API did not confirm the token (${result.error ?? `HTTP ${result.status}`})`, fix: 'check the network connection to discord.com' };
}

async function getJson(url: string, headers: Record<string, string>, timeoutMs: number): Promise<{ status: number; body: unknown; error?: string }> {
  try {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
    return { status: response.status, body: await response.json().catch(() => null) };
  } catch (err) {
    const cause = err instanceof Error ? (err.cause as { code?: string } | undefined) : undefined;
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    return { status: 0, body: null, error: timedOut ? `no answer within ${timeoutMs} ms` : cause?.code ?? 'network error' };
  }
}
