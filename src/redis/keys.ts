/**
 * The only place Redis key names are built. Every key of one session shares the hash tag
 * `{<sessionId>}`, so multi-key scripts work on Redis Cluster.
 */

/** Default key prefix of session keys. */
export const DEFAULT_KEY_PREFIX = 'cg:';

/** The keys of one session. */
export interface SessionKeys {
  /** List of projection entries (JSON `{ message, tokens }`): the history the model sees. */
  history: string;
  /** Stream of every message and compaction event; append-only. */
  transcript: string;
  /** Hash: version, compaction state, token report, route, turn bookkeeping. */
  meta: string;
  /** Hash: the usage ledger (counters). */
  usage: string;
  /** List of inbound messages (JSON) waiting for a turn. */
  inbox: string;
  /** List of inbound messages taken by the running turn; deleted when the turn commits. */
  processing: string;
  /** String: fencing token of the worker that holds the session. */
  lease: string;
  /** Hash: the `remember` notes (name → text), outside the projection. */
  notes: string;
  /** List of outbound replies committed but not yet enqueued. */
  outbox: string;
  /** List of inbound messages (JSON) whose turn failed for good (dead letters; newest 1000 kept). */
  failed: string;
  /** Hash: the running turn's step log (its latest round: model answer, tool calls started and their results). */
  steps: string;
  /** String: a `/stop` request for the running turn (its lease's fencing token, or `queued`); short TTL. */
  stop: string;
  /** Hash: approval id → the asked tool call and its decision (JSON, versioned; src/approvals). */
  approvals: string;
  /** Hash: tool name → the "Always in this chat" grant (JSON); emptied by `/new`. */
  grants: string;
}

/** The parts of a session's key names: each key is `<prefix>{<sessionId>}:<part>`. */
const SESSION_KEY_PARTS: ReadonlyArray<keyof SessionKeys> = [
  'history', 'transcript', 'meta', 'usage', 'inbox', 'processing', 'lease', 'notes', 'outbox', 'failed', 'steps', 'stop', 'approvals', 'grants',
];

/** The keys of session `sessionId` under `prefix` (default `cg:`). */
export function sessionKeys(sessionId: string, prefix: string = DEFAULT_KEY_PREFIX): SessionKeys {
  const base = `${prefix}{${sessionId}}:`;
  return Object.fromEntries(SESSION_KEY_PARTS.map((part) => [part, `${base}${part}`])) as unknown as SessionKeys;
}

/**
 * Hash: the usage rollup of a session for one hour (`2026-12-02T10`) or day (`2026-12-02`), UTC
 * (src/usage). In the session's slot, so the commit that writes the ledger writes it too.
 */
export function usageRollupKey(sessionId: string, period: 'hour' | 'day', label: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}{${sessionId}}:usage-${period === 'hour' ? 'h' : 'd'}:${label}`;
}

/**
 * Sorted set of session ids scored by last activity (ms since epoch), for monitoring. It lives in
 * its own slot; commits update it with a separate command after the atomic script.
 */
export function sessionIndexKey(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}sessions`;
}

/**
 * Sorted set of pending approvals (`<approval id>@<session id>`) scored by when they expire (ms);
 * the gateway expires the due ones. Its own slot, like the session index.
 */
export function approvalsDueKey(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}approvals-due`;
}

/** Pub/sub channel of turn signals (typing, turn started/ended) for the gateway. */
export function turnSignalChannel(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}signals`;
}

/** Pub/sub channel on which a `/stop` request's session id is published (workers running its turn wake up). */
export function turnStopChannel(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}turn-stops`;
}

/**
 * Marker of an inbound message the gateway already took (a platform re-delivery is dropped). In the
 * session's hash slot, so it is set in the same script that appends the message to the inbox.
 */
export function seenKey(sessionId: string, messageId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}{${sessionId}}:seen:${messageId}`;
}

/** Marker that an unlisted user was already told they are not authorised (told once a day). */
export function deniedKey(channel: string, userId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}denied:${channel}:${userId}`;
}

/** Counter of one user's messages in one rate-limit window. */
export function rateLimitKey(channel: string, userId: string, windowIndex: number, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}rate:${channel}:${userId}:${windowIndex}`;
}

/** Hash `chunk index → platform message id` of one reply's delivery, in the session's hash slot. */
export function replyDeliveryKey(sessionId: string, replyId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}{${sessionId}}:delivery:${replyId}`;
}

/**
 * Sorted set of sessions that were given a message (scored by when); the gateway's sweeper
 * enqueues a turn for any whose inbox is not empty, so a crash between accepting a message and
 * enqueueing its turn cannot strand it. Its own slot, like the session index.
 */
export function pendingIndexKey(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}pending`;
}

/**
 * Sorted set of one session's replies waiting for a retry in the outbound queue (delivery order):
 * under the queue prefix, so it shares the queue's Cluster slot.
 */
export function outboundOrderKey(queuePrefix: string, outboundQueue: string, sessionId: string): string {
  return `${queuePrefix}:${outboundQueue}:chatgate-pending:${sessionId}`;
}

/** The keys of one shard of the outbound transport (src/outbound/outbound-shard.ts), all in the shard prefix's slot. */
export interface OutboundShardKeys {
  /** Stream of replies waiting or being delivered (fields `id`, `data`, `attempts`, `enq`), read by one consumer group. */
  stream: string;
  /** Sorted set: reply id → when it is due again, ms (rate limited, backing off, held behind an older reply). */
  delayed: string;
  /** Hash: reply id → the delayed reply's entry (JSON `{ data, attempts, enq }`). */
  delayedData: string;
  /** Sorted set: reply id → when it failed for good, ms (kept 7 days). */
  failed: string;
  /** Hash: reply id → the failed reply's record (JSON: reason, attempts, the message). */
  failedData: string;
  /** The idempotency marker of reply `replyId` (`SET NX`: one live or recent copy per id). */
  marker(replyId: string): string;
}

/** Keys of the outbound transport under BullMQ-style prefix `queuePrefix` (one shard) and queue name `queue`. */
export function outboundShardKeys(queuePrefix: string, queue: string): OutboundShardKeys {
  const base = `${queuePrefix}:${queue}:stream`;
  return {
    stream: base, delayed: `${base}-delayed`, delayedData: `${base}-delayed-data`, failed: `${base}-failed`, failedData: `${base}-failed-data`,
    marker: (replyId) => `${base}-id:${replyId}`,
  };
}

/**
 * Stream of one web chat conversation's replies (`text`, `format`, `at`), capped near the web chat's
 * buffer size; its stream ids are the clients' cursors. Hash-tagged by conversation.
 */
export function webConversationKey(conversationId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}web:{${conversationId}}:replies`;
}

/** List of a channel's platform updates that kept failing and were set aside (newest first). */
export function channelDeadLetterKey(channel: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}channel:${channel}:set-aside`;
}

/** Pub/sub channel on which a web chat reply's conversation id is published when it is appended. */
export function webRepliesChannel(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}web-replies`;
}

/**
 * String: the bytes of one stored attachment, with a TTL (src/redis/attachments.ts). In the
 * session's hash slot; `id` is derived from the inbound message id and the attachment's index.
 */
export function attachmentKey(sessionId: string, id: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}{${sessionId}}:att:${id}`;
}

/** Marker that the session was told its model cannot see images (told once per session). */
export function visionNoticeKey(sessionId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}{${sessionId}}:vision-notice`;
}

/**
 * The keys of the gateways' and workers' heartbeats, all in one hash slot (`{heartbeats}`): `seen`
 * is a hash `role:id → last heartbeat (JSON)`, and `live(member)` a key that lives as long as the
 * heartbeat's TTL (a dead process's key expires; its `seen` entry says when it was last heard of).
 */
export function heartbeatKeys(prefix: string = DEFAULT_KEY_PREFIX): { seen: string; live: (member: string) => string } {
  return { seen: `${prefix}{heartbeats}:seen`, live: (member) => `${prefix}{heartbeats}:live:${member}` };
}

/**
 * The running turns of one worker process (`host:pid:random`, its heartbeat id): a hash of session id
 * → the turn's job, lock token and lease fence, so another process can recover them when the
 * worker stops beating. `claim` is who recovers a dead worker's turns (one process at a time).
 */
export function workerTurnKeys(workerId: string, prefix: string = DEFAULT_KEY_PREFIX): { turns: string; claim: string } {
  const base = `${prefix}{worker-turns:${workerId}}:`;
  return { turns: `${base}turns`, claim: `${base}claim` };
}

/** Pub/sub channel of partial replies (streaming): workers publish, every gateway listens. */
export function liveRepliesChannel(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}live-replies`;
}

/**
 * Hash of the chat message a gateway shows one stream in (`messageId`), whether its final reply
 * took it over (`final`), and which gateway shows it (`owner`, `ownerUntil`, `callUntil`: one
 * at a time, src/live-reply/record.ts), in the session's hash slot: a retried or restarted delivery finds it.
 */
export function liveReplyRecordKey(sessionId: string, liveReplyId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}{${sessionId}}:live-reply:${liveReplyId}`;
}

/** Hash of a Discord bot's channels → the newest message handled in each (channels/discord/catch-up.ts). */
export function discordCursorsKey(botId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}discord-cursors:${botId}`;
}

/** When a gateway of Discord bot `botId` was last connected (ms since epoch; the catch-up's gap start). */
export function discordConnectedKey(botId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}discord-connected:${botId}`;
}

/**
 * String: the number of queue shards the deployment's queues are laid out in, written at first
 * start (src/queue/shard-layout.ts). Under the unsharded queue prefix, so it is found whatever N a
 * process is started with.
 */
export function queueLayoutKey(queuePrefix: string): string {
  return `${queuePrefix}:chatgate-shards`;
}

/**
 * Sorted set of the processes using the recorded queue layout: member `<N>:<process id>`, scored by
 * when it expires unless renewed (src/queue/shard-layout.ts). Beside {@link queueLayoutKey}, in its slot.
 */
export function queueLayoutUsersKey(queuePrefix: string): string {
  return `${queuePrefix}:chatgate-shards-users`;
}

/** The keys of one channel connection's lease (who polls Telegram or holds the Discord gateway connection for one bot). */
export interface ChannelLeaseKeys {
  /** String: the holder's fencing token; expires unless renewed. */
  lease: string;
  /** Hash: `fence` (the last token handed out), `holder`, `holderFence`, `heldSinceMs`. */
  meta: string;
}

/**
 * The lease keys of `channel` for the bot identified by `botId` — a hash of its token, never the
 * token itself. Both share one hash tag, so the acquiring script runs on Redis Cluster.
 */
export function channelLeaseKeys(channel: string, botId: string, prefix: string = DEFAULT_KEY_PREFIX): ChannelLeaseKeys {
  const base = `${prefix}{channel-lease:${channel}:${botId}}:`;
  return { lease: `${base}lease`, meta: `${base}meta` };
}

/** Set of `<channel>:<botId>` whose connection is leased (what `chatgate status` lists). */
export function channelLeaseIndexKey(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}channel-leases`;
}

/** Pub/sub channel on which `<channel>:<botId>` is published when a gateway releases that lease. */
export function channelLeaseReleasedChannel(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}channel-lease-released`;
}

/**
 * Keys of the budgets, all under the one hash tag `{budget}` so one script reserves against every
 * level at once (on Redis Cluster they all live on one node; docs/scaling.md).
 */
export function budgetKeys(prefix: string = DEFAULT_KEY_PREFIX): { limits: string; counters: (monthId: string) => string; exhausted: (level: string, subject: string) => string; markerChannel: string } {
  const base = `${prefix}{budget}:`;
  return {
    limits: `${base}limits`,
    // Pub/sub: every exhaustion marker set or dropped (the budget script names it KEYS[1] .. ':markers').
    markerChannel: `${base}limits:markers`,
    counters: (monthId) => `${base}counters:${monthId}`,
    exhausted: (level, subject) => `${base}exhausted:${level}:${subject}`,
  };
}

/** Pub/sub channel on which a gateway passes an OpenAI-compatible API answer to the gateway whose request waits for it. */
export function apiRepliesChannel(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}api-replies`;
}

/**
 * String: the claim of the API request of chat `chatId` (`<user>:<session>`) that waits for its
 * answer, on any gateway (its message id, after `~` for a command's request, whose claim yields;
 * expires unless renewed). One request waiting for a turn's answer at a time per session; no claim:
 * no request waits for the chat's answer anywhere (channels/openai-api/relay.ts).
 */
export function apiAskingKey(chatId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}api:{${chatId}}:asking`;
}

/**
 * Sorted set: the command requests of chat `chatId` waiting on any gateway (message id → expiry,
 * ms), whether or not they hold {@link apiAskingKey}: a command's claim yields, and its request must
 * still be found once the request it yielded to is answered (channels/openai-api/relay.ts).
 */
export function apiYieldingKey(chatId: string, prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${prefix}api:{${chatId}}:yielding`;
}
