/**
 * The one read model of usage over time: the CLI (`chatgate usage --since … --by …`), the API
 * (`GET /api/usage`) and the dashboard's overview read it, so they show the same figures. It reads
 * the sessions' rollup hashes (src/usage/rollup-format.ts) of every session active in the span
 * (the session index) and merges them: totals, groups by user, chat, channel or model, and a series
 * per hour or day.
 */
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis/client.js';
import { DEFAULT_KEY_PREFIX, sessionIndexKey, usageRollupKey } from '../redis/keys.js';
import { UsageQueryError } from '../errors.js';
import { addFigures, bucketsBetween, DEFAULT_DAILY_DAYS, DEFAULT_HOURLY_DAYS, parseRollupHash, zeroFigures, type RollupFigures } from './rollup-format.js';
import { parseSince, spanWords, toUsageFigures, type UsageFigures, type UsageSince } from './figures.js';

/** The dimensions a report groups by. */
export const USAGE_DIMENSIONS = ['user', 'chat', 'channel', 'model'] as const;

/** One dimension: `user` (`<channel>:<userId>`), `chat` (session id), `channel`, `model`. */
export type UsageBy = (typeof USAGE_DIMENSIONS)[number];

/** The report format version (the `format` field of the JSON the CLI and the API print). */
export const USAGE_REPORT_FORMAT = 1;

/** One group of a report: its key (a user, chat, channel or model; '' for usage without a user) and figures. */
export interface UsageGroup {
  key: string;
  figures: UsageFigures;
}

/** One point of the series: an hour or a day (UTC). */
export interface UsagePoint {
  /** `2026-12-02T10` or `2026-12-02`. */
  label: string;
  startMs: number;
  figures: UsageFigures;
}

/** What `chatgate usage --json` and `GET /api/usage` return. */
export interface UsageReport {
  format: typeof USAGE_REPORT_FORMAT;
  since: string;
  /** "in the last 7 days", "today", … */
  span: string;
  period: UsageSince['period'];
  fromMs: number;
  untilMs: number;
  by: UsageBy;
  totals: UsageFigures;
  /** By cost, then tokens, highest first. */
  groups: UsageGroup[];
  series: UsagePoint[];
}

/** Every dimension of one read, for views that show several (the overview). */
export interface UsageDigest {
  since: UsageSince;
  untilMs: number;
  totals: UsageFigures;
  groups: Record<UsageBy, UsageGroup[]>;
  series: UsagePoint[];
}

/** Options of {@link createUsageReader}. */
export interface UsageReaderOptions {
  /** Default `cg:`. */
  keyPrefix?: string;
  /** Days the rollups are kept (what `since` may ask for). Defaults 14 (hourly), 400 (daily). */
  hourlyDays?: number;
  dailyDays?: number;
  /** Clock, ms. Default `Date.now`. */
  now?: () => number;
}

/** The usage read model. */
export interface UsageReader {
  /** @throws UsageQueryError for a `since` or `by` outside the rules. */
  report(query: { since: string; by: string }): Promise<UsageReport>;
  /** Every dimension of one span. @throws UsageQueryError for a bad `since`. */
  digest(since: string): Promise<UsageDigest>;
}

const SESSION_BATCH = 200;
/** The session index's score may trail a commit by this much (src/redis/session-store.ts). */
const INDEX_LAG_MS = 1000;

/** Creates the reader over `redis`. */
export function createUsageReader(redis: RedisClient, options: UsageReaderOptions = {}): UsageReader {
  const keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  const retention = { hourlyDays: options.hourlyDays ?? DEFAULT_HOURLY_DAYS, dailyDays: options.dailyDays ?? DEFAULT_DAILY_DAYS };
  const now = options.now ?? Date.now;
  const digest = async (sinceText: string): Promise<UsageDigest> => {
    const untilMs = now();
    const since = parseSince(sinceText, untilMs, retention);
    return readDigest(redis, keyPrefix, since, untilMs);
  };
  return {
    digest,
    async report(query) {
      if (!(USAGE_DIMENSIONS as readonly string[]).includes(query.by)) throw new UsageQueryError(`by must be one of ${USAGE_DIMENSIONS.join(', ')} (got ${query.by})`);
      const by = query.by as UsageBy;
      const read = await digest(query.since);
      return {
        format: USAGE_REPORT_FORMAT, since: read.since.text, span: spanWords(read.since), period: read.since.period,
        fromMs: read.since.fromMs, untilMs: read.untilMs, by, totals: read.totals, groups: read.groups[by], series: read.series,
      };
    },
  };
}

/** Sums of a span: the totals, one map per dimension, one per bucket. */
interface Sums {
  totals: RollupFigures;
  groups: Record<UsageBy, Map<string, RollupFigures>>;
  series: Map<string, RollupFigures>;
}

async function readDigest(redis: RedisClient, keyPrefix: string, since: UsageSince, untilMs: number): Promise<UsageDigest> {
  const buckets = bucketsBetween(since.period, since.fromMs, untilMs);
  const sessions = await redis.zrangebyscore(sessionIndexKey(keyPrefix), since.fromMs - INDEX_LAG_MS, '+inf');
  const sums: Sums = { totals: zeroFigures(), groups: { user: new Map(), chat: new Map(), channel: new Map(), model: new Map() }, series: new Map() };
  for (let start = 0; start < sessions.length; start += SESSION_BATCH) {
    const batch = sessions.slice(start, start + SESSION_BATCH);
    const keys = batch.flatMap((id) => buckets.map((bucket) => usageRollupKey(id, since.period, bucket.label, keyPrefix)));
    const hashes = await readHashes(redis, keys);
    batch.forEach((sessionId, s) => buckets.forEach((bucket, b) => {
      const k = s * buckets.length + b;
      for (const row of parseRollupHash(hashes[k]!, `the usage rollup ${keys[k]}`)) {
        addRow(sums, { chat: sessionId, channel: sessionId.split(':')[0] ?? '', user: row.user, model: row.model }, bucket.label, row.figures);
      }
    }));
  }
  return {
    since, untilMs, totals: toUsageFigures(sums.totals),
    groups: Object.fromEntries(USAGE_DIMENSIONS.map((by) => [by, toGroups(sums.groups[by])])) as Record<UsageBy, UsageGroup[]>,
    series: buckets.map((bucket) => ({ label: bucket.label, startMs: bucket.startMs, figures: toUsageFigures(sums.series.get(bucket.label) ?? zeroFigures()) })),
  };
}

function addRow(sums: Sums, keys: Record<UsageBy, string>, bucket: string, figures: RollupFigures): void {
  addFigures(sums.totals, figures);
  for (const by of USAGE_DIMENSIONS) addFigures(entry(sums.groups[by], keys[by]), figures);
  addFigures(entry(sums.series, bucket), figures);
}

function entry(map: Map<string, RollupFigures>, key: string): RollupFigures {
  let figures = map.get(key);
  if (!figures) map.set(key, (figures = zeroFigures()));
  return figures;
}

function toGroups(map: Map<string, RollupFigures>): UsageGroup[] {
  return [...map.entries()]
    .map(([key, raw]) => ({ key, raw }))
    .sort((a, b) => b.raw.cost - a.raw.cost || (b.raw.in + b.raw.cached + b.raw.out) - (a.raw.in + a.raw.cached + a.raw.out) || a.key.localeCompare(b.key))
    .map(({ key, raw }) => ({ key, figures: toUsageFigures(raw) }));
}

/** HGETALL of every key: one pipeline on a single node; on a cluster, one command each, in parallel. */
async function readHashes(redis: RedisClient, keys: readonly string[]): Promise<Array<Record<string, string>>> {
  if (keys.length === 0) return [];
  if (redis.isCluster) return Promise.all(keys.map((key) => redis.hgetall(key)));
  const pipe: ChainableCommander = redis.pipeline();
  for (const key of keys) pipe.hgetall(key);
  const replies = (await pipe.exec()) ?? [];
  return replies.map(([err, value]) => {
    if (err) throw err;
    return value as Record<string, string>;
  });
}
