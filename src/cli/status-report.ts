import type { Config } from '../config.js';
import { noWorkerReason, START_A_WORKER } from '../gateway/heartbeat.js';
import { resolveQueueNames } from '../queue/names.js';
import { openShardedQueue } from '../queue/sharded.js';
import { openOutboundQueue } from '../outbound/outbound-queue.js';
import type { FailedReply, OutboundCounts } from '../outbound/outbound-shard.js';
import { recordedShards } from '../queue/shard-layout.js';
import type { RedisClient } from '../redis/client.js';
import { countDeadLetters, type DeadLetterTotals } from '../redis/dead-letters.js';
import { readWorkerTurns } from '../redis/worker-turns.js';
import { budgetSettingsGroups, describeBudgetDigest, describeBudgetGroups, describeForeignBeats, gatewayChannelRows, HEARTBEAT_FORMAT, readHeartbeats, type ForeignBeat, type HeartbeatStatus } from '../redis/heartbeats.js';
import { judgeChannels } from '../gateway/channel-health.js';
import { readChannelLeases, type ChannelLeaseHolder } from '../redis/channel-lease.js';
import { leasesCheck } from './status-leases.js';
import { isLlmUnconfigured, LLM_HELP, probeModels } from './llm-check.js';
import { readerFor } from './sessions.js';
import { judgeMcpServers } from './mcp-check.js';
import type { StatusCheck } from './status-check.js';

/** Counts of one queue: the turn queue's BullMQ counts (with `prioritized` and `completed`), the outbound streams' four. */
export type QueueCounts = OutboundCounts & { prioritized?: number; completed?: number };

/** Everything `chatgate status --json` prints. */
export interface StatusReport {
  /** False when any check is `down`. */
  ok: boolean;
  checks: StatusCheck[];
  /** Gateways and workers heard of (live, and dead ones for an hour), newest beat first. */
  processes: HeartbeatStatus[];
  /** Live processes beating another heartbeat format (another chatgate version): named by entry, not read. */
  foreignBeats: ForeignBeat[];
  /** Which gateway holds each leased channel connection (Telegram polling, Discord), from Redis. */
  channelLeases: ChannelLeaseHolder[];
  /** By queue name. */
  queues: Record<string, QueueCounts>;
  /** The most recent replies that failed for good (within 7 days), newest first, with their reason. */
  failedReplies: FailedReply[];
  failed: DeadLetterTotals;
  /** Turns still recorded as running on a dead worker (being recovered by a live one), by worker. */
  deadWorkerTurns: Array<{ worker: string; host: string; pid: number; turns: number; sessions: string[] }>;
  /** Sessions whose next request is at or over the hygiene trigger (of the fullest `scanned`). */
  sessions: { total: number; overHygiene: number; hygieneAt: number; paused: number; scanned: number };
}

/** Sessions read (fullest first) to count those over the hygiene line. */
const FULLEST_SESSIONS = 500;
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed'] as const;
/** Replies failed for good that the report names with their reason. */
const FAILED_REPLIES_SHOWN = 5;
const FAILED_REPLIES_FIX = 'replies that failed for good are kept 7 days with their reason (`chatgate status --json`: failedReplies); a permanent reason (chat not found, bot blocked) needs no action';

/**
 * Reads what runs and how it stands: heartbeats, queues, dead letters and the session figures
 * (through the one session view `chatgate sessions` and the dashboard read), then judges each part.
 * `onProgress` is told of each step that may wait.
 */
export async function buildStatusReport(config: Config, redis: RedisClient, onProgress: (text: string) => void = () => undefined): Promise<StatusReport> {
  const keyPrefix = config.redis.keyPrefix;
  const { processes, foreign: foreignBeats } = await readHeartbeats(redis, { keyPrefix });
  const channelLeases = await readChannelLeases(redis, keyPrefix);
  const { queues, failedReplies } = await readQueues(redis, config);
  const failed = await countDeadLetters(redis, keyPrefix);
  const page = await readerFor(config, { redis }).listSessions({ sort: 'fill', limit: FULLEST_SESSIONS });
  const hygieneAt = config.compaction.hygieneThreshold;
  const over = page.items.filter((row) => row.fill >= hygieneAt);
  const sessions = { total: page.total, overHygiene: over.length, hygieneAt, paused: page.items.filter((row) => row.paused).length, scanned: page.items.length };
  const gateways = processes.filter((p) => p.role === 'gateway');
  const workers = processes.filter((p) => p.role === 'worker');
  const deadWorkerTurns = await readDeadWorkerTurns(redis, workers, keyPrefix);
  const checks: StatusCheck[] = [
    { name: 'redis', status: 'ok', detail: 'answers' },
    gatewayCheck(gateways),
    workersCheck(workers, deadWorkerTurns),
    ...mcpCheck(config, workers),
    channelsCheck(gateways),
    leasesCheck(channelLeases, gateways),
    await llmCheck(config, workers, onProgress),
    queuesCheck(queues, workers.some((w) => w.alive), { configured: config.redis.queueShards, recorded: await recordedShards(redis, config.redis.queuePrefix) }),
    failedCheck(failed, queues, failedReplies),
    sessionsCheck(sessions),
    ...budgetsCheck(processes),
    ...versionsCheck(foreignBeats),
  ];
  return { ok: !checks.some((c) => c.status === 'down'), checks, processes, foreignBeats, channelLeases, queues, failedReplies, failed, deadWorkerTurns, sessions };
}

/** Every shard's counts, summed: the turn queue's from BullMQ, the outbound streams' (and their latest failures). */
async function readQueues(redis: RedisClient, config: Config): Promise<{ queues: Record<string, QueueCounts>; failedReplies: FailedReply[] }> {
  const names = resolveQueueNames({ queuePrefix: config.redis.queuePrefix, queueShards: config.redis.queueShards });
  const turns = openShardedQueue<{ sessionId: string }>(names.turnQueue, names, redis);
  turns.onError(() => undefined); // failures surface where its commands fail
  const outbound = openOutboundQueue(redis, names);
  try {
    const [turnCounts, outboundCounts, failedReplies] = await Promise.all([turns.getJobCounts(...QUEUE_STATES), outbound.counts(), outbound.failed(FAILED_REPLIES_SHOWN)]);
    return { queues: { [names.turnQueue]: turnCounts as unknown as QueueCounts, [names.outboundQueue]: outboundCounts }, failedReplies };
  } finally {
    await turns.close();
  }
}

/** The MCP servers per live worker; no line when none is configured. */
function mcpCheck(config: Config, workers: readonly HeartbeatStatus[]): StatusCheck[] {
  const verdict = judgeMcpServers(config, workers);
  return verdict ? [{ name: 'mcp', ...verdict }] : [];
}

function gatewayCheck(gateways: readonly HeartbeatStatus[]): StatusCheck {
  const live = gateways.filter((g) => g.alive);
  if (live.length > 0) return { name: 'gateway', status: 'ok', detail: `${live.length} running: ${live.map((g) => `${describeProcess(g)} at ${g.gateway?.httpUrl ?? '?'}`).join('; ')}` };
  const last = gateways[0];
  return {
    name: 'gateway', status: 'down',
    detail: `no gateway is running${last ? ` (the last one, ${last.host} pid ${last.pid}, was heard of ${ago(last.beatAt)})` : ''}: no message is received or delivered`,
    fix: 'start it: `chatgate gateway` (or `chatgate start` for gateway and workers in one process)',
  };
}

/** The turns each dead worker still has recorded as running (a live worker recovers them within seconds), with their sessions. */
async function readDeadWorkerTurns(redis: RedisClient, workers: readonly HeartbeatStatus[], keyPrefix: string): Promise<StatusReport['deadWorkerTurns']> {
  const dead = workers.filter((w) => !w.alive);
  const turns = await Promise.all(dead.map((w) => readWorkerTurns(redis, w.id, keyPrefix)));
  return dead.flatMap((w, k) => (turns[k]!.length > 0 ? [{ worker: w.id, host: w.host, pid: w.pid, turns: turns[k]!.length, sessions: turns[k]!.map((turn) => turn.sessionId).sort() }] : []));
}

function workersCheck(workers: readonly HeartbeatStatus[], deadTurns: StatusReport['deadWorkerTurns']): StatusCheck {
  const live = workers.filter((w) => w.alive);
  const dead = workers.filter((w) => !w.alive);
  const held = (w: HeartbeatStatus) => deadTurns.find((d) => d.worker === w.id)?.turns ?? 0;
  const deadText = dead.length > 0 ? `; dead: ${dead.map((w) => `${w.host} pid ${w.pid} (last heard of ${ago(w.beatAt)}${held(w) > 0 ? `; ${plural(held(w), 'active turn')} of it being recovered` : ''})`).join(', ')}` : '';
  if (live.length === 0) return { name: 'workers', status: 'down', detail: `${noWorkerReason([])}${deadText}`, fix: START_A_WORKER };
  const text = live.map((w) => `${describeProcess(w)}, ${plural(w.worker?.turnsDone ?? 0, 'turn')} done, ${w.worker?.turnsFailed ?? 0} failed`).join('; ');
  if (deadTurns.length > 0) return { name: 'workers', status: 'warn', detail: `${live.length} alive: ${text}${deadText}`, fix: 'a live worker resumes a dead worker\'s turns within seconds of its last beat; if they stay, check the workers\' logs for "worker stopped beating"' };
  return { name: 'workers', status: 'ok', detail: `${live.length} alive: ${text}${deadText}` };
}

/** The channels each live gateway's heartbeat reports, judged once (src/gateway/channel-health.ts): the dashboard shows the same. */
function channelsCheck(gateways: readonly HeartbeatStatus[]): StatusCheck {
  const live = gateways.filter((g) => g.alive && g.gateway);
  return { name: 'channels', ...judgeChannels(gatewayChannelRows(live), live.length) };
}

async function llmCheck(config: Config, workers: readonly HeartbeatStatus[], onProgress: (text: string) => void): Promise<StatusCheck> {
  const calls = workers.filter((w) => w.alive && w.worker?.lastModelCall).map((w) => ({ worker: w, call: w.worker!.lastModelCall! }));
  calls.sort((a, b) => b.call.at - a.call.at);
  const latest = calls[0];
  if (latest) {
    const where = `the last model call (${latest.worker.worker?.llm.model ?? '?'}, ${latest.worker.host} pid ${latest.worker.pid}) ${ago(latest.call.at)}`;
    if (latest.call.outcome === 'ok') return { name: 'llm', status: 'ok', detail: `${where} was answered` };
    return { name: 'llm', status: 'down', detail: `${where} failed (${latest.call.outcome})`, fix: LLM_HELP };
  }
  if (config.demo || workers.some((w) => w.alive && w.worker?.llm.demo)) return { name: 'llm', status: 'ok', detail: 'the built-in demo model (no model call yet)' };
  // Nothing to probe: the defaults name OpenAI without a key (`chatgate start` runs the demo model then).
  if (isLlmUnconfigured(config)) return { name: 'llm', status: 'down', detail: 'no LLM endpoint is configured (neither OPENAI_BASE_URL nor OPENAI_API_KEY is set) and no worker runs the demo model', fix: LLM_HELP };
  onProgress(`no model call yet; checking the LLM endpoint ${config.llm.baseUrl}…`);
  const probe = await probeModels(config.llm);
  return probe.ok ? { name: 'llm', status: 'ok', detail: `no model call yet; ${probe.detail}` } : { name: 'llm', status: 'down', detail: probe.detail, fix: LLM_HELP };
}

function queuesCheck(queues: Record<string, QueueCounts>, workersAlive: boolean, shards: { configured: number; recorded: number | null }): StatusCheck {
  const parts = Object.entries(queues).map(([name, c]) => `${name}: ${c.waiting + (c.prioritized ?? 0)} waiting, ${c.active} active, ${c.delayed} delayed, ${c.failed} failed`);
  if (shards.configured > 1) parts.push(`${shards.configured} shards`);
  if (shards.recorded !== null && shards.recorded !== shards.configured) {
    return {
      name: 'queues', status: 'warn', detail: `${parts.join('; ')} (counted in ${shards.configured} shard(s); Redis records a layout of ${shards.recorded})`,
      fix: `the running processes use CHATGATE_QUEUE_SHARDS=${shards.recorded}: use the same value here, or see docs/sharding.md to change it`,
    };
  }
  const waiting = Object.values(queues).reduce((sum, c) => sum + c.waiting + (c.prioritized ?? 0), 0);
  if (waiting > 0 && !workersAlive) return { name: 'queues', status: 'warn', detail: parts.join('; '), fix: 'jobs wait for a worker: start one (`chatgate worker`)' };
  return { name: 'queues', status: 'ok', detail: parts.join('; ') };
}

function failedCheck(failed: DeadLetterTotals, queues: Record<string, QueueCounts>, replies: readonly FailedReply[]): StatusCheck {
  const setAside = Object.entries(failed.setAside).map(([channel, n]) => `${n} ${channel} update${n === 1 ? '' : 's'} set aside`);
  const capped = failed.indexed > failed.scanned ? ` (of the ${failed.scanned} most recent sessions)` : '';
  const extra = setAside.length > 0 ? `; ${setAside.join(', ')}` : '';
  const jobs = Object.entries(queues).filter(([, c]) => c.failed > 0).map(([name, c]) => `${c.failed} ${name} job${c.failed === 1 ? '' : 's'} failed`);
  // The reasons of the latest replies that failed for good: what bull-board showed before the outbound streams.
  const why = replies.length > 0 ? ` (latest: ${replies.map((r) => `${r.id}${r.message ? ` to ${r.message.sessionId}` : ''}: ${r.reason}`).join('; ')})` : '';
  const outbound = jobs.length > 0 ? `; ${jobs.join(', ')}${why}` : '';
  if (failed.messages === 0) {
    const status = setAside.length > 0 || jobs.length > 0 ? 'warn' : 'ok';
    return { name: 'failed', status, detail: `no failed messages${capped}${extra}${outbound}`, ...(jobs.length > 0 ? { fix: FAILED_REPLIES_FIX } : {}) };
  }
  const top = failed.sessions.slice(0, 5).map((s) => `${s.id} (${s.count})`).join(', ');
  const first = failed.sessions[0]!.id;
  return {
    name: 'failed', status: 'warn',
    detail: `${plural(failed.messages, 'failed message')} in ${plural(failed.sessions.length, 'session')}${capped}: ${top}${failed.sessions.length > 5 ? ', …' : ''}${extra}${outbound}`,
    fix: `\`chatgate failed ${first}\` lists them, \`chatgate retry ${first}\` puts them back in the inbox`,
  };
}

function sessionsCheck(s: StatusReport['sessions']): StatusCheck {
  const line = `${plural(s.total, 'session')}; ${s.overHygiene} at or over the hygiene line (${Math.round(s.hygieneAt * 100)}% of the usable window)${s.paused > 0 ? `, ${s.paused} with automatic compaction paused` : ''}`;
  if (s.overHygiene === 0 && s.paused === 0) return { name: 'sessions', status: 'ok', detail: line };
  return { name: 'sessions', status: 'warn', detail: line, fix: '`chatgate sessions --sort fill` lists the fullest; hygiene compacts an idle one before its next turn, `chatgate compact <session>` does it now' };
}

/** Whether the live gateways and workers run the same budget settings (their beats' digests); no line when none is alive. */
function budgetsCheck(processes: readonly HeartbeatStatus[]): StatusCheck[] {
  const groups = budgetSettingsGroups(processes);
  if (groups.length === 0) return [];
  if (groups.length === 1) return [{ name: 'budgets', status: 'ok', detail: `every live gateway and worker has ${describeBudgetDigest(groups[0]!.digest)}` }];
  return [{
    name: 'budgets', status: 'warn', detail: `the live gateways and workers enforce different limits: ${describeBudgetGroups(groups)}`,
    fix: 'start every gateway and worker with the same CHATGATE_BUDGET_* and CHATGATE_BUDGETS_FILE (read at start: restart the ones that differ)',
  }];
}

/** Processes of another chatgate version on the prefix (a rolling upgrade): named, not read; no line when there is none. */
function versionsCheck(foreign: readonly ForeignBeat[]): StatusCheck[] {
  if (foreign.length === 0) return [];
  return [{ name: 'versions', status: 'warn', detail: describeForeignBeats(foreign), fix: `run one chatgate version per key prefix (this one beats heartbeat format ${HEARTBEAT_FORMAT})` }];
}

function describeProcess(p: HeartbeatStatus): string {
  return `${p.host} pid ${p.pid} (v${p.version}, up ${duration(Date.now() - p.startedAt)})`;
}

function ago(atMs: number): string {
  return `${duration(Date.now() - atMs)} ago`;
}

function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}
