import { hostname } from 'node:os';
import { createHash, randomBytes } from 'node:crypto';
import { hasBudgets, type BudgetLimit, type BudgetSettings, type LevelLimits } from '../core/budget.js';
import type { Logger } from '../log.js';
import type { RedisClient } from './client.js';
import { DEFAULT_KEY_PREFIX, heartbeatKeys } from './keys.js';

/** Which part of chatgate a process runs. A `chatgate start` process beats as both. */
export type HeartbeatRole = 'gateway' | 'worker';

/** What a worker says of itself in each heartbeat. */
export interface WorkerBeat {
  /** Turn queue it takes turns from. */
  queue: string;
  /** Turns it runs at once. */
  concurrency: number;
  /** The LLM it runs with: what an operator command uses when its own environment names none. */
  llm: LlmBeat;
  /** Turns it committed, and turns that failed (an attempt), since it started. */
  turnsDone: number;
  turnsFailed: number;
  /** Its last model call: when (ms since epoch) and how it ended (`ok` or the `LlmError` kind). */
  lastModelCall?: { at: number; outcome: string };
  /** The MCP servers it connects to (workers/tools/mcp), in configuration order; absent without any. */
  mcp?: McpServerBeat[];
}

/** The LLM settings of a worker, as its heartbeat records them (never the API key). */
export interface LlmBeat {
  /** The agent's model. */
  model: string;
  /** The summary model. */
  summaryModel: string;
  /** The model's context window, tokens. */
  contextWindow: number;
  /** The OpenAI-compatible base URL, credentials masked (in demo mode the demo model's loopback URL); absent: the openai SDK's default. */
  baseUrl?: string;
  /** True when it runs the built-in offline demo model (`chatgate start --demo`). */
  demo: boolean;
}

/** One MCP server as one worker sees it. */
export interface McpServerBeat {
  /** Its name in the MCP configuration. */
  name: string;
  transport: 'stdio' | 'http' | 'sse';
  /** `connecting` (first attempt), `connected`, `reconnecting` (it failed; the next attempt is scheduled), `disabled`. */
  state: 'connecting' | 'connected' | 'reconnecting' | 'disabled';
  /** Tools it offers the agent (after the allow and deny lists). */
  tools: number;
  /** What last went wrong with it, in one line (never a secret), and when (ms since epoch). */
  lastError?: string;
  lastErrorAtMs?: number;
}

/**
 * Where a channel of a gateway stands: `connecting` (its start runs), `waiting` (for the channels
 * started before it), `connected`, or `disconnected` (it connected, then lost its platform: see
 * {@link ChannelHealthBeat} for why).
 */
export type ChannelState = 'connected' | 'connecting' | 'waiting' | 'disconnected';

/** A channel's health in a gateway's beat. */
export interface ChannelHealthBeat {
  /** As {@link ChannelState}, or `standby`: another gateway holds this channel's connection (the channel lease); this one only sends. */
  state: ChannelState | 'standby';
  /** Why it is disconnected: the platform's answer in one line. */
  reason?: string;
  /** Since when it is disconnected, ms since epoch. */
  sinceMs?: number;
  /** The platform refused the bot token. */
  tokenRejected?: boolean;
}

/** What a gateway says of itself in each heartbeat. */
export interface GatewayBeat {
  /** Base URL of its HTTP server (web chat, monitor). */
  httpUrl: string;
  /** Each channel it runs and its health: read it through {@link gatewayChannelRows}. */
  channels: Record<string, ChannelHealthBeat>;
}

/** One channel of one live gateway, as the gateway's last beat says. */
export interface GatewayChannelRow extends ChannelHealthBeat {
  channel: string;
  gateway: Pick<HeartbeatRecord, 'id' | 'host' | 'pid'>;
}

/** One process's heartbeat as written to Redis. */
export interface HeartbeatRecord {
  role: HeartbeatRole;
  /** `host:pid:random`, unique per process start. */
  id: string;
  host: string;
  pid: number;
  /** When the process started, ms since epoch. */
  startedAt: number;
  /** chatgate version. */
  version: string;
  /** When this beat was written (the writer's clock), ms since epoch. */
  beatAt: number;
  /** How long the beat lives in Redis, ms; the writer renews it every third of that. */
  ttlMs: number;
  /** The digest of the budget settings it started with ({@link budgetSettingsDigest}; `off`: none set). */
  budgetDigest: string;
  worker?: WorkerBeat;
  gateway?: GatewayBeat;
}

/** A heartbeat as read back: `alive` while its TTL has not run out. */
export interface HeartbeatStatus extends HeartbeatRecord {
  alive: boolean;
}

/**
 * A live process whose beat is of another format version: another chatgate version on this key
 * prefix (a rolling upgrade). Named by its entry, never read: no compatibility code for other formats.
 */
export interface ForeignBeat {
  /** Its entry in the heartbeats hash, `<role>:<id>`. */
  member: string;
  /** Its `format` as stored (absent: none). */
  format?: unknown;
}

/** What {@link readHeartbeats} found. */
export interface HeartbeatsRead {
  /** Gateways and workers heard of (live, and dead ones for `forgetAfterMs`), newest beat first. */
  processes: HeartbeatStatus[];
  /** Live processes beating another heartbeat format, by entry: views name them ({@link describeForeignBeats}). */
  foreign: ForeignBeat[];
}

/** Options of {@link readHeartbeats}. */
export interface ReadHeartbeatsOptions {
  /** Session key prefix. Default `cg:`. */
  keyPrefix?: string;
  /** A dead process is reported this long after its last beat, then forgotten, ms. Default 1 hour. */
  forgetAfterMs?: number;
  now?: () => number;
}

/** A running heartbeat. */
export interface Heartbeat {
  /** Writes one beat now. */
  beat(): Promise<void>;
  /** Stops beating and removes the entry: a process that stopped cleanly is not reported as dead. */
  stop(): Promise<void>;
}

const FORGET_AFTER_MS = 3_600_000;
/** The format version of a stored heartbeat record (its `format` field), written by {@link writeHeartbeat}. */
export const HEARTBEAT_FORMAT = 2;
/** How long `stop` waits to remove the entry, ms. */
const STOP_BOUND_MS = 1000;

/** Default life of a heartbeat, ms (renewed every third: a beat every 5 s). */
export const DEFAULT_HEARTBEAT_TTL_MS = 15_000;

/** A process id for heartbeats: `host:pid:random`. */
export function newProcessId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** Writes `record` (its live key with a TTL of `record.ttlMs`, and its last-seen entry, stamped with {@link HEARTBEAT_FORMAT}) atomically. */
export async function writeHeartbeat(redis: RedisClient, record: HeartbeatRecord, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<void> {
  const keys = heartbeatKeys(keyPrefix);
  const member = memberOf(record);
  await redis.multi().set(keys.live(member), '1', 'PX', record.ttlMs).hset(keys.seen, member, JSON.stringify({ format: HEARTBEAT_FORMAT, ...record })).exec();
}

/** Removes a process's heartbeat (it stopped cleanly). */
export async function removeHeartbeat(redis: RedisClient, record: Pick<HeartbeatRecord, 'role' | 'id'>, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<void> {
  const keys = heartbeatKeys(keyPrefix);
  const member = memberOf(record);
  await redis.multi().del(keys.live(member)).hdel(keys.seen, member).exec();
}

/**
 * Every gateway and worker heard of: the live ones, and the dead ones (live key expired, no clean
 * stop) for `forgetAfterMs` after their last beat, after which their entry is deleted. Newest first.
 * A beat of another format version is never read and never fails the read: a live one is named in
 * `foreign`; its entry is kept, a dead one too (its own version's readers forget it).
 */
export async function readHeartbeats(redis: RedisClient, options: ReadHeartbeatsOptions = {}): Promise<HeartbeatsRead> {
  const keys = heartbeatKeys(options.keyPrefix ?? DEFAULT_KEY_PREFIX);
  const now = (options.now ?? Date.now)();
  const seen = await redis.hgetall(keys.seen);
  const members = Object.keys(seen);
  if (members.length === 0) return { processes: [], foreign: [] };
  const live = await redis.mget(...members.map((member) => keys.live(member)));
  const processes: HeartbeatStatus[] = [];
  const foreign: ForeignBeat[] = [];
  const forget: string[] = [];
  members.forEach((member, k) => {
    const record = parseRecord(seen[member]!);
    const alive = live[k] !== null;
    if (record !== null && 'foreign' in record) {
      if (alive) foreign.push(record.foreign === undefined ? { member } : { member, format: record.foreign });
    } else if (!record || (!alive && now - record.beatAt > (options.forgetAfterMs ?? FORGET_AFTER_MS))) forget.push(member);
    else processes.push({ ...record, alive });
  });
  if (forget.length > 0) await redis.hdel(keys.seen, ...forget);
  processes.sort((a, b) => b.beatAt - a.beatAt || a.id.localeCompare(b.id));
  foreign.sort((a, b) => a.member.localeCompare(b.member));
  return { processes, foreign };
}

/**
 * What an operator reads of `foreign` (one sentence, by format), e.g. "1 process beats heartbeat
 * format 1 (another chatgate version): worker:box:12:a1b2c3; it is not shown: upgrade or stop it".
 */
export function describeForeignBeats(foreign: readonly ForeignBeat[]): string {
  const byFormat = new Map<string, string[]>();
  for (const beat of foreign) {
    const format = JSON.stringify(beat.format) ?? 'none';
    byFormat.set(format, [...(byFormat.get(format) ?? []), beat.member]);
  }
  const groups = [...byFormat].map(([format, members]) => `${members.length} ${members.length === 1 ? 'process beats' : 'processes beat'} heartbeat format ${format} (another chatgate version): ${members.join(', ')}`);
  return `${groups.join('; ')}; ${foreign.length === 1 ? 'it is not shown: upgrade or stop it' : 'they are not shown: upgrade or stop them'}`;
}

/**
 * The channels of the live gateways among `beats` (as {@link readHeartbeats} returns them), in
 * their order: the one read of channel health that `chatgate status`, `doctor` and the dashboard
 * show.
 */
export function gatewayChannelRows(beats: readonly HeartbeatStatus[]): GatewayChannelRow[] {
  return beats.filter((beat) => beat.role === 'gateway' && beat.alive && beat.gateway).flatMap((beat) => {
    const gateway = { id: beat.id, host: beat.host, pid: beat.pid };
    return Object.entries(beat.gateway!.channels).map(([channel, health]) => ({ ...health, channel, gateway }));
  });
}

/** One MCP server of one live worker, as the worker's last beat says. */
export interface McpServerRow extends McpServerBeat {
  worker: Pick<HeartbeatRecord, 'id' | 'host' | 'pid'>;
}

/** The MCP servers of the live workers among `beats`: the one read `chatgate status`, `doctor` and the dashboard show. */
export function mcpServerRows(beats: readonly HeartbeatStatus[]): McpServerRow[] {
  return beats.filter((beat) => beat.role === 'worker' && beat.alive && beat.worker?.mcp).flatMap((beat) => {
    const worker = { id: beat.id, host: beat.host, pid: beat.pid };
    return beat.worker!.mcp!.map((server) => ({ ...server, worker }));
  });
}

/** The digest of settings that set no limit: such a process checks no budget at all. */
const BUDGETS_OFF_DIGEST = 'off';

/**
 * A short, stable digest (12 hex digits) of what decides which limits hold: the limits of every
 * level, the turn caps, the budgets file's users, the time zone and the notice percent (not the
 * webhook), in a normalized form, so two processes with the same settings have the same digest
 * however they were written. {@link BUDGETS_OFF_DIGEST} when no limit is set (or `settings` is
 * absent). Heartbeats carry it: `chatgate budgets list` and `status` compare them.
 */
export function budgetSettingsDigest(settings: BudgetSettings | undefined): string {
  if (!settings || !hasBudgets(settings)) return BUDGETS_OFF_DIGEST;
  const limit = (l?: BudgetLimit) => (l && (l.usd !== undefined || l.tokens !== undefined) ? [l.usd ?? null, l.tokens ?? null] : null);
  const level = (l: LevelLimits | 'unlimited') => (l === 'unlimited' ? l : [limit(l.day), limit(l.month)]);
  const users = Object.keys(settings.users).sort().map((user) => [user, level(settings.users[user]!)]);
  // Version 1 of the digested form: a change of what it covers must change every digest.
  const form = [1, level(settings.user), level(settings.chat), level(settings.deployment), limit(settings.turn), settings.timeZone, settings.noticePercent, users];
  return createHash('sha256').update(JSON.stringify(form)).digest('hex').slice(0, 12);
}

/** A live gateway or worker, as the budget settings readers name it. */
export type BeatingProcess = Pick<HeartbeatRecord, 'role' | 'id' | 'host' | 'pid' | 'budgetDigest'>;

/** The budget settings of the live gateways and workers, grouped by digest. */
export interface BudgetSettingsGroup {
  digest: string;
  processes: BeatingProcess[];
}

/**
 * The live processes among `beats` grouped by the digest of their budget settings, the most
 * processes first (gateways, then workers, by host and pid): more than one group means they
 * enforce different limits. The one read of `chatgate budgets list`, `status` and the dashboard's status.
 */
export function budgetSettingsGroups(beats: readonly HeartbeatStatus[]): BudgetSettingsGroup[] {
  const groups = new Map<string, BeatingProcess[]>();
  for (const beat of beats) {
    if (!beat.alive) continue;
    const member = { role: beat.role, id: beat.id, host: beat.host, pid: beat.pid, budgetDigest: beat.budgetDigest };
    groups.set(beat.budgetDigest, [...(groups.get(beat.budgetDigest) ?? []), member]);
  }
  const byName = (a: BeatingProcess, b: BeatingProcess) => a.role.localeCompare(b.role) || a.host.localeCompare(b.host) || a.pid - b.pid || a.id.localeCompare(b.id);
  return [...groups].map(([digest, processes]) => ({ digest, processes: processes.sort(byName) })).sort((a, b) => b.processes.length - a.processes.length || a.digest.localeCompare(b.digest));
}

/** "gateway a pid 1, worker a pid 2 have budgets off (no limit set); worker c pid 3 has budget settings 3f2a9c0d12ab". */
export function describeBudgetGroups(groups: readonly BudgetSettingsGroup[]): string {
  return groups.map((g) => `${nameProcesses(g.processes)} ${g.processes.length === 1 ? 'has' : 'have'} ${describeBudgetDigest(g.digest)}`).join('; ');
}

/** How a digest reads in a line: `budgets off (no limit set)` or `budget settings 3f2a9c0d12ab`. */
export function describeBudgetDigest(digest: string): string {
  return digest === BUDGETS_OFF_DIGEST ? 'budgets off (no limit set)' : `budget settings ${digest}`;
}

/**
 * Beats now and then every third of `ttlMs` with the record `current()` returns. A beat that
 * fails (Redis down) is logged at debug and tried again on the next tick: the readers say what is
 * missing. @returns once the first beat is written (or failed).
 */
export async function startHeartbeat(deps: { redis: RedisClient; logger: Logger }, options: { keyPrefix: string; current: () => HeartbeatRecord }): Promise<Heartbeat> {
  const log = deps.logger.child({ component: 'heartbeat' });
  let stopped = false;
  // One beat at a time: while Redis is away a beat waits for the reconnect, and ticks do not pile up.
  let inFlight: Promise<void> | undefined;
  const beat = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    inFlight ??= writeHeartbeat(deps.redis, options.current(), options.keyPrefix)
      .catch((err: unknown) => log.debug({ err }, 'heartbeat not written'))
      .finally(() => { inFlight = undefined; });
    return inFlight;
  };
  await beat();
  const timer = setInterval(() => void beat(), Math.max(100, Math.floor(options.current().ttlMs / 3)));
  timer.unref();
  return {
    beat,
    async stop() {
      stopped = true;
      clearInterval(timer);
      // Bounded: a shutdown while Redis is away must not hang on it (the entry then expires by itself).
      const removed = removeHeartbeat(deps.redis, options.current(), options.keyPrefix).catch((err: unknown) => log.debug({ err }, 'heartbeat not removed'));
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([removed, new Promise<void>((resolve) => { timeout = setTimeout(resolve, STOP_BOUND_MS); })]);
      clearTimeout(timeout);
    },
  };
}

function memberOf(record: Pick<HeartbeatRecord, 'role' | 'id'>): string {
  return `${record.role}:${record.id}`;
}

/** The record stored in an entry; `{ foreign }` (its format) for another format version; null when it is not one (forgotten). */
function parseRecord(raw: string): HeartbeatRecord | { foreign: unknown } | null {
  let value: (HeartbeatRecord & { format?: unknown }) | null;
  try {
    value = JSON.parse(raw) as (HeartbeatRecord & { format?: unknown }) | null;
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object') return null;
  if (value.format !== HEARTBEAT_FORMAT) return { foreign: value.format };
  const { format: _format, ...record } = value;
  return typeof record.id === 'string' && typeof record.beatAt === 'number' ? record : null;
}

/** "gateway box pid 10, worker box pid 12". */
function nameProcesses(processes: readonly Pick<HeartbeatRecord, 'role' | 'host' | 'pid'>[]): string {
  return processes.map((p) => `${p.role} ${p.host} pid ${p.pid}`).join(', ');
}
