import { randomInt } from 'node:crypto';
import { toApprovalRecord, type ApprovalDecider, type ApprovalGrant, type ApprovalRecord, type DecisionVia } from '../core/approval.js';
import type { RedisClient } from '../redis/client.js';
import { approvalsDueKey, sessionKeys, type SessionKeys } from '../redis/keys.js';
import { runScriptWithOptions } from '../redis/scripts.js';
import { DEFAULT_TRANSCRIPT_RETENTION } from '../redis/session-store.js';

/** Default of how long an asked call waits for a decision, in ms (10 min; `CHATGATE_APPROVAL_TIMEOUT_SECONDS`). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 600_000;
const ID_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const ID_LENGTH = 6;

/** Options of {@link createApprovalStore}. */
export interface ApprovalStoreOptions {
  keyPrefix: string;
  /** Approximate transcript length kept (decisions join the transcript); 0 = unbounded. Default: the session store's, {@link DEFAULT_TRANSCRIPT_RETENTION}. */
  transcriptRetention?: number;
  now?: () => number;
}

/** A decision as asked: what, how, by whom. */
export interface DecisionRequest {
  decision: 'approved' | 'denied' | 'expired';
  via: DecisionVia;
  by?: ApprovalDecider;
  /** With `approved`: the tool is granted for the session ("Always in this chat"). */
  always?: boolean;
}

/** What a decision did: `applied` now, `decided` before (nothing changed), `not-due` (an expiry asked early), `unknown` id. */
export type DecisionOutcome = { outcome: 'applied' | 'decided' | 'not-due'; record: ApprovalRecord } | { outcome: 'unknown' };

/** One pending approval in the expiry index. */
export interface DueApproval {
  sessionId: string;
  id: string;
  member: string;
}

/** The session's approvals and grants in Redis (`keys.approvals`, `keys.grants`, the expiry index). */
export interface ApprovalStore {
  /** Stores a new pending approval (an existing id is kept as it is) and indexes its expiry. */
  create(record: ApprovalRecord): Promise<void>;
  /** The records of `ids`, in order (null where there is none). @throws Error on a record of another format version. */
  read(sessionId: string, ids: readonly string[]): Promise<Array<ApprovalRecord | null>>;
  /** Every approval of the session, oldest first. */
  list(sessionId: string): Promise<ApprovalRecord[]>;
  /** Decides one approval atomically (src/approvals/scripts/decide-approval-3.lua). */
  decide(sessionId: string, id: string, request: DecisionRequest): Promise<DecisionOutcome>;
  /** The session's "Always in this chat" grants, by tool name. */
  grants(sessionId: string): Promise<ApprovalGrant[]>;
  /** Whether `tool` is granted in the session. */
  isGranted(sessionId: string, tool: string): Promise<boolean>;
  /** Removes the grant of `tool`. @returns whether there was one. */
  revoke(sessionId: string, tool: string): Promise<boolean>;
  /** Removes every grant of the session (`/new`). */
  clearGrants(sessionId: string): Promise<void>;
  /** Pending approvals whose expiry is at or before `nowMs`, at most `limit`. */
  due(nowMs: number, limit: number): Promise<DueApproval[]>;
  /** Takes an approval out of the expiry index. */
  forgetDue(entry: DueApproval): Promise<void>;
}

/** A new approval id: 6 characters people can type (no 0/o, 1/l/i). */
export function newApprovalId(): string {
  let id = '';
  for (let k = 0; k < ID_LENGTH; k++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

/** Creates the approval store. */
export function createApprovalStore(redis: RedisClient, options: ApprovalStoreOptions): ApprovalStore {
  const keysOf = (sessionId: string): SessionKeys => sessionKeys(sessionId, options.keyPrefix);
  const dueKey = approvalsDueKey(options.keyPrefix);
  const now = options.now ?? Date.now;
  return {
    async create(record) {
      await redis.hsetnx(keysOf(record.sessionId).approvals, record.id, JSON.stringify(record));
      await redis.zadd(dueKey, record.expiresAtMs, `${record.id}@${record.sessionId}`);
    },
    async read(sessionId, ids) {
      if (ids.length === 0) return [];
      const raw = await redis.hmget(keysOf(sessionId).approvals, ...ids);
      return raw.map((json) => (json === null ? null : toApprovalRecord(json)));
    },
    async list(sessionId) {
      const raw = await redis.hvals(keysOf(sessionId).approvals);
      return raw.map(toApprovalRecord).sort((a, b) => a.askedAtMs - b.askedAtMs);
    },
    async decide(sessionId, id, request) {
      const keys = keysOf(sessionId);
      const opts = { id, ...request, always: request.always === true, nowMs: now(), transcriptRetention: options.transcriptRetention ?? DEFAULT_TRANSCRIPT_RETENTION };
      const [outcome, json] = (await runScriptWithOptions(redis, 'decideApproval', [keys.approvals, keys.grants, keys.transcript], opts)) as [string, string];
      if (outcome === 'unknown') return { outcome: 'unknown' };
      return { outcome: outcome as 'applied' | 'decided' | 'not-due', record: toApprovalRecord(json) };
    },
    async grants(sessionId) {
      const raw = await redis.hvals(keysOf(sessionId).grants);
      return raw.map((json) => JSON.parse(json) as ApprovalGrant).sort((a, b) => a.atMs - b.atMs);
    },
    async isGranted(sessionId, tool) {
      return (await redis.hexists(keysOf(sessionId).grants, tool)) === 1;
    },
    async revoke(sessionId, tool) {
      return (await redis.hdel(keysOf(sessionId).grants, tool)) === 1;
    },
    async clearGrants(sessionId) {
      await redis.del(keysOf(sessionId).grants);
    },
    async due(nowMs, limit) {
      const members = await redis.zrangebyscore(dueKey, '-inf', nowMs, 'LIMIT', 0, limit);
      return members.map((member) => {
        const at = member.indexOf('@');
        return { id: member.slice(0, at), sessionId: member.slice(at + 1), member };
      });
    },
    async forgetDue(entry) {
      await redis.zrem(dueKey, entry.member);
    },
  };
}
