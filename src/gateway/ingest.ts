import { parseCommand, type ChatCommand } from '../core/commands.js';
import { sessionKeyOf, toWellFormedInbound, type AllowList, type ChannelName, type GroupSessionMode, type InboundMessage, type InboundOutcome, type InboundVerdict, type OutboundMessage } from '../core/inbound.js';
import { measureText } from '../core/split.js';
import type { Logger } from '../log.js';
import { NOOP_METRICS, type Metrics } from '../metrics.js';
import { replyJobId } from '../queue/names.js';
import { enqueueOutbound, type OutboundSink } from '../queue/outbound.js';
import type { TurnProducer } from '../queue/producer.js';
import type { RedisClient } from '../redis/client.js';
import { acceptInbound } from '../redis/inbox.js';
import { deniedKey, rateLimitKey, seenKey, sessionKeys } from '../redis/keys.js';
import type { SessionOps } from '../session/session-ops.js';
import { acceptPlain, countInWindow } from './accept.js';
import type { HygieneFigures } from '../redis/hygiene-figures.js';
import type { AttachmentIngest } from './attachments.js';
import { runCommand, type CommandDeps } from './commands.js';
import { retryTurn, stopTurn } from './turn-commands.js';
import type { RetryPort } from '../session/retry.js';
import { automaticCompactionNotice } from '../core/compaction/compaction-text.js';
import { countOf } from '../core/plural.js';

export type { AllowList };

/** How the gateway handled one inbound message. */
export type IngestOutcome = InboundOutcome;

/** What the ingest pipeline needs. */
export interface IngestDeps {
  /** A connection that fails fast when Redis is down (so the platform is asked to re-deliver). */
  redis: RedisClient;
  producer: TurnProducer;
  /** Session operations of commands (`/compact` may take its time: it runs in the background). */
  ops: SessionOps;
  /** Session operations of the hygiene check (after the acknowledgement, before the session's turn): bounded. Default `ops`. */
  hygiene?: SessionOps;
  commands: Omit<CommandDeps, 'ops' | 'stop' | 'retry'>;
  /** `/retry` (takes the last exchange out under the session's lease). Absent: `/retry` is not available. */
  retry?: RetryPort;
  /** The outbound queue: notices (command answers, refusals) are delivered like replies. */
  outbound: OutboundSink;
  logger: Logger;
  /** Where inbound outcomes and hygiene firings are counted. Default {@link NOOP_METRICS}. */
  metrics?: Metrics;
  now?: () => number;
  /** Downloads and stores the files of a message before it enters the inbox (src/gateway/attachments.ts). Default: files are passed on as reported. */
  attachments?: AttachmentIngest;
}

/** Options of the ingest pipeline. */
export interface IngestOptions {
  keyPrefix: string;
  allow: Readonly<Record<ChannelName, AllowList>>;
  /** Messages per user per minute; 0 = unlimited. */
  rateLimitPerMinute: number;
  /** Longest accepted message, in characters. */
  maxMessageChars: number;
  groupMode: GroupSessionMode;
  /** How long a message id is remembered to drop platform re-deliveries, in seconds. Default 86 400. */
  dedupeTtlSeconds?: number;
  /** Tell the user in one line when hygiene compacted their conversation. Default true. */
  compactionNotice?: boolean;
}

/** The one pipeline every channel's messages go through. */
export interface Ingest {
  /**
   * Handles one message: duplicates, allow-list, rate limit, size, commands, then accept (inbox).
   * Resolves once the message is durably in Redis (or answered); rejects when it is not, so the
   * platform re-delivers it. An accepted message's hygiene check and turn job follow in the
   * background (per session, in order; see {@link Ingest.idle}).
   */
  handle(message: InboundMessage): Promise<IngestOutcome>;
  /** Resolves once the background work of accepted messages (hygiene, then their turn job) is done. */
  idle(): Promise<void>;
  /** {@link Ingest.handle} with the whole verdict: a refusal's reason and, when rate-limited, its wait. */
  receive(message: InboundMessage): Promise<InboundVerdict>;
}

const DAY_S = 86_400;

/** Creates the ingest pipeline. */
export function createIngest(deps: IngestDeps, options: IngestOptions): Ingest {
  const log = deps.logger.child({ component: 'ingest' });
  const now = deps.now ?? Date.now;
  const ttl = options.dedupeTtlSeconds ?? DAY_S;
  const ctx: Context = { deps, options, log, now, ttl, metrics: deps.metrics ?? NOOP_METRICS, background: createBackgroundTasks() };
  const receive = async (received: InboundMessage): Promise<InboundVerdict> => {
    const message = toWellFormedInbound(received);
    const sessionId = sessionKeyOf(message, options.groupMode);
    try {
      const verdict = await route(ctx, message, sessionId);
      ctx.metrics.record({ type: 'inbound', channel: message.channel, outcome: verdict.outcome });
      log.debug({ sessionId, channel: message.channel, outcome: verdict.outcome }, 'inbound handled');
      return verdict;
    } catch (err) {
      log.error({ err, sessionId, channel: message.channel }, 'inbound message not handled');
      throw err;
    }
  };
  return { receive, handle: async (message) => (await receive(message)).outcome, idle: () => ctx.background.idle() };
}

interface Context {
  deps: IngestDeps;
  options: IngestOptions;
  log: Logger;
  now: () => number;
  ttl: number;
  metrics: Metrics;
  background: BackgroundTasks;
}

/** Per-session background work (hygiene, then the turn): one task at a time per session, tracked for `idle()`. */
interface BackgroundTasks {
  run(sessionId: string, task: () => Promise<void>): void;
  idle(): Promise<void>;
}

function createBackgroundTasks(): BackgroundTasks {
  const tails = new Map<string, Promise<void>>();
  return {
    run(sessionId, task) {
      const tail = (tails.get(sessionId) ?? Promise.resolve()).then(task).catch(() => undefined);
      tails.set(sessionId, tail);
      void tail.then(() => {
        if (tails.get(sessionId) === tail) tails.delete(sessionId);
      });
    },
    async idle() {
      while (tails.size > 0) await Promise.all([...tails.values()]);
    },
  };
}

async function route(ctx: Context, message: InboundMessage, sessionId: string): Promise<InboundVerdict> {
  const { deps, options } = ctx;
  const command = message.unsupportedReply === undefined ? parseCommand(message.text) : null;
  // A plain message from a listed user with no files to fetch (nearly all of them): one script.
  if (command === null && message.unsupportedReply === undefined && (!deps.attachments || message.attachments.length === 0) && isAllowed(options.allow[message.channel], message.userId)) return routePlain(ctx, message, sessionId);
  const seen = seenKey(sessionId, message.id, options.keyPrefix);
  if ((await deps.redis.exists(seen)) === 1) return { outcome: await duplicate(ctx, sessionId) };
  const refused = await admit(ctx, message, sessionId, command !== null);
  if (refused) return refused;
  if (command) return { outcome: await answerCommand(ctx, message, sessionId, seen, command) };
  if (message.unsupportedReply !== undefined) return { outcome: await answerUnsupported(ctx, message, sessionId, seen, message.unsupportedReply) };
  const files = ctx.deps.attachments ? await ctx.deps.attachments.take(message, sessionId) : { ok: true as const, attachments: message.attachments };
  if (!files.ok) {
    await refuse(ctx, message, sessionId, files.reason, files.outcome);
    return { outcome: files.outcome, reason: files.reason };
  }
  const { clientAddress: _address, refusalsAnswered: _answered, ...rest } = message;
  const stored = { ...rest, attachments: files.attachments };
  if (!(await acceptInbound(deps.redis, sessionId, stored, { keyPrefix: options.keyPrefix, dedupeTtlSeconds: ctx.ttl, nowMs: ctx.now() }))) return { outcome: await duplicate(ctx, sessionId) };
  // The message is durable now: the platform gets its acknowledgement at once. Hygiene runs after
  // it, one at a time per session, and the session's turn is enqueued after its hygiene; other
  // chats never wait for it. A crash in between is caught by the pending sweeper.
  ctx.background.run(sessionId, () => hygieneThenTurn(ctx, sessionId, message));
  return { outcome: 'accepted' };
}

/**
 * {@link route} for a plain message: dedupe, rate limit, size, pending mark and accept in one
 * script whose reply also carries the hygiene pre-check's figures (src/gateway/accept.ts); then,
 * in the background, the hygiene decision (no Redis unless it fires) and the turn's `add`.
 */
async function routePlain(ctx: Context, message: InboundMessage, sessionId: string): Promise<InboundVerdict> {
  const { deps, options } = ctx;
  const nowMs = ctx.now();
  const window = Math.floor(nowMs / 60_000);
  const senders = [message.userId, ...(message.clientAddress ? [`addr:${message.clientAddress}`] : [])];
  const rate = options.rateLimitPerMinute > 0 ? { keys: senders.map((sender) => rateLimitKey(message.channel, sender, window, options.keyPrefix)), limit: options.rateLimitPerMinute, ttlSeconds: 120 } : null;
  const chars = measureText(message.text, 'codepoints');
  const { clientAddress: _address, refusalsAnswered: _answered, ...stored } = message;
  const result = await acceptPlain(deps.redis, { sessionId, message: stored, keyPrefix: options.keyPrefix, dedupeTtlSeconds: ctx.ttl, nowMs, rate, tooLong: chars > options.maxMessageChars });
  switch (result.kind) {
    case 'duplicate':
      if (result.inboxLength > 0) await deps.producer.enqueueTurn(sessionId);
      return { outcome: 'duplicate' };
    case 'rate_limited': return refuseRate(ctx, message, sessionId, (window + 1) * 60_000 - ctx.now());
    case 'too_long': return refuseSize(ctx, message, sessionId, chars);
    case 'accepted':
      ctx.background.run(sessionId, () => hygieneThenTurn(ctx, sessionId, message, result.figures));
      return { outcome: 'accepted' };
  }
}

async function hygieneThenTurn(ctx: Context, sessionId: string, message: InboundMessage, figures?: HygieneFigures): Promise<void> {
  const channel = message.channel;
  await runHygiene(ctx, sessionId, message, figures);
  await ctx.deps.producer.enqueueTurn(sessionId).catch((err: unknown) => {
    ctx.log.warn({ err, sessionId, channel }, 'turn not enqueued after hygiene; the pending sweeper will');
  });
}

/** A re-delivery: nothing to add, but make sure a turn is pending in case the first delivery died before enqueueing it. */
async function duplicate(ctx: Context, sessionId: string): Promise<IngestOutcome> {
  const keys = sessionKeys(sessionId, ctx.options.keyPrefix);
  if ((await ctx.deps.redis.llen(keys.inbox)) > 0) await ctx.deps.producer.enqueueTurn(sessionId);
  return 'duplicate';
}

/** Allow-list, rate limit (commands do not count) and size; a refusal is answered unless the adapter shows it. */
async function admit(ctx: Context, message: InboundMessage, sessionId: string, isCommand: boolean): Promise<InboundVerdict | null> {
  const { options } = ctx;
  if (!isAllowed(options.allow[message.channel], message.userId)) return deny(ctx, message, sessionId);
  if (options.rateLimitPerMinute > 0 && !isCommand) {
    const retryAfterMs = await rateLimited(ctx, message);
    if (retryAfterMs !== null) return refuseRate(ctx, message, sessionId, retryAfterMs);
  }
  const chars = measureText(message.text, 'codepoints');
  if (chars > options.maxMessageChars) return refuseSize(ctx, message, sessionId, chars);
  return null;
}

async function refuseRate(ctx: Context, message: InboundMessage, sessionId: string, retryAfterMs: number): Promise<InboundVerdict> {
  const reason = `You are sending messages faster than ${ctx.options.rateLimitPerMinute} a minute, so this one was not read. Wait ${Math.ceil(retryAfterMs / 1000)} s, then send it again.`;
  await refuse(ctx, message, sessionId, reason, 'rate');
  return { outcome: 'rate_limited', reason, retryAfterMs };
}

async function refuseSize(ctx: Context, message: InboundMessage, sessionId: string, chars: number): Promise<InboundVerdict> {
  const reason = `Your message has ${countOf(chars, 'character')}; the limit is ${ctx.options.maxMessageChars.toLocaleString('en-US')}. Please shorten it or split it into several messages.`;
  await refuse(ctx, message, sessionId, reason, 'size');
  return { outcome: 'too_long', reason };
}

/** An unlisted user: told once a day in private chats, never in groups. */
async function deny(ctx: Context, message: InboundMessage, sessionId: string): Promise<InboundVerdict> {
  const { deps, options } = ctx;
  const reason = `You are not authorised to use this bot (your ${message.channel} user id is ${message.userId}). Ask its operator to add you.`;
  ctx.log.info({ channel: message.channel, userId: message.userId, chatType: message.chatType }, 'unlisted user refused');
  if (message.chatType === 'group' || message.refusalsAnswered) return { outcome: 'denied', reason }; // silence in groups
  const marker = deniedKey(message.channel, message.userId, options.keyPrefix);
  if ((await deps.redis.set(marker, '1', 'EX', DAY_S, 'NX')) === null) return { outcome: 'denied', reason }; // told already today
  try {
    await notify(ctx, message, sessionId, reason, 'denied');
  } catch (err) {
    await deps.redis.del(marker).catch(() => undefined);
    throw err;
  }
  return { outcome: 'denied', reason };
}

/**
 * Counts the message in its sender's window, and in its address's when the adapter knows it.
 * @returns the wait until the window ends when over the limit, else null.
 */
async function rateLimited(ctx: Context, message: InboundMessage): Promise<number | null> {
  const { deps, options } = ctx;
  const window = Math.floor(ctx.now() / 60_000);
  const senders = [message.userId, ...(message.clientAddress ? [`addr:${message.clientAddress}`] : [])];
  const counts = await Promise.all(senders.map((sender) => countInWindow(deps.redis, rateLimitKey(message.channel, sender, window, options.keyPrefix), 120)));
  if (counts.every((count) => count <= options.rateLimitPerMinute)) return null;
  return (window + 1) * 60_000 - ctx.now();
}

/** Answers a refused message, quoting it (one notice per message, a re-delivery included), unless the adapter shows it. */
async function refuse(ctx: Context, message: InboundMessage, sessionId: string, reason: string, tag: string): Promise<void> {
  if (message.refusalsAnswered) return;
  await notify(ctx, message, sessionId, reason, tag, true);
}

async function answerCommand(ctx: Context, message: InboundMessage, sessionId: string, seen: string, command: ChatCommand): Promise<IngestOutcome> {
  const { deps } = ctx;
  if ((await deps.redis.set(seen, String(message.receivedAt), 'EX', ctx.ttl, 'NX')) === null) return 'duplicate';
  const answer = async () => {
    const reply = await runCommand(commandDeps(ctx, message), sessionId, command);
    if (reply !== null) await notify(ctx, message, sessionId, reply, `cmd-${command.name}`);
  };
  if (command.name === 'compact') {
    // A summary can take a minute: the platform gets its acknowledgement now, the answer follows.
    void answer().catch(async (err: unknown) => {
      ctx.log.error({ err, sessionId }, 'compact command failed');
      await notify(ctx, message, sessionId, 'The compaction failed unexpectedly; nothing was changed. Please try /compact again in a while.', 'cmd-compact-failed').catch(() => undefined);
    });
    return 'command';
  }
  try {
    await answer();
    return 'command';
  } catch (err) {
    await deps.redis.del(seen).catch(() => undefined); // not answered: let the platform re-deliver it
    throw err;
  }
}

/** The command handlers for one command message: `/stop` and `/retry` act on this message's session. */
function commandDeps(ctx: Context, message: InboundMessage): CommandDeps {
  const { deps, options } = ctx;
  const accept = (retried: InboundMessage) => acceptInbound(deps.redis, sessionKeyOf(retried, options.groupMode), retried, { keyPrefix: options.keyPrefix, dedupeTtlSeconds: ctx.ttl, nowMs: ctx.now() });
  return {
    ...deps.commands, ops: deps.ops,
    stop: (sessionId) => stopTurn(deps.redis, sessionId, options.keyPrefix),
    retry: (sessionId) => retryTurn(deps.retry, sessionId, message, accept, () => ctx.background.run(sessionId, () => hygieneThenTurn(ctx, sessionId, message))),
  };
}

/** Media the bot cannot read: the adapter's short answer, once per message, through the outbound queue. */
async function answerUnsupported(ctx: Context, message: InboundMessage, sessionId: string, seen: string, reply: string): Promise<IngestOutcome> {
  if ((await ctx.deps.redis.set(seen, String(message.receivedAt), 'EX', ctx.ttl, 'NX')) === null) return 'duplicate';
  try {
    await notify(ctx, message, sessionId, reply, 'unsupported', true);
  } catch (err) {
    await ctx.deps.redis.del(seen).catch(() => undefined); // not answered: let the platform re-deliver it
    throw err;
  }
  return 'unsupported';
}

async function runHygiene(ctx: Context, sessionId: string, message: InboundMessage, figures?: HygieneFigures): Promise<void> {
  const channel = message.channel;
  try {
    const result = await (ctx.deps.hygiene ?? ctx.deps.ops).hygiene(sessionId, figures);
    if (!result) return;
    ctx.metrics.record({ type: 'hygiene_fired', channel });
    ctx.log.info({ sessionId, channel, outcome: result.outcome, tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter }, 'hygiene compaction');
    const notice = ctx.options.compactionNotice === false ? null : automaticCompactionNotice(result);
    // Once per compaction: the id is the message's whose hygiene ran it, so a re-run cannot repeat it.
    if (notice) await notify(ctx, message, sessionId, notice, 'hygiene-compaction').catch((err: unknown) => ctx.log.warn({ err, sessionId, channel }, 'compaction notice not enqueued'));
  } catch (err) {
    ctx.log.warn({ err, sessionId, channel }, 'hygiene compaction failed; dispatching anyway');
  }
}

function notify(ctx: Context, message: InboundMessage, sessionId: string, text: string, tag: string, quote = false) {
  const id = replyJobId([message.id, tag], 'notice');
  const notice: OutboundMessage = {
    id, sessionId, channel: message.channel, chatId: message.chatId, threadId: message.threadId, text, kind: 'notice',
    // In groups the answer quotes the message it answers, so everyone sees whose command it was; a
    // refusal always quotes the message it refuses.
    ...((quote || message.chatType === 'group') && message.platformMessageId ? { replyTo: message.platformMessageId } : {}),
  };
  return enqueueOutbound(ctx.deps.outbound, notice);
}

function isAllowed(list: AllowList | undefined, userId: string): boolean {
  if (list === undefined || list === '*') return true;
  return list.includes('*') || list.includes(userId);
}
