import type { Queue } from 'bullmq';
import { parseCommand } from '../core/commands.js';
import { sessionKeyOf, type ChannelName, type GroupSessionMode, type InboundMessage, type OutboundMessage } from '../core/inbound.js';
import type { Logger } from '../log.js';
import { hygieneFiringsTotal, inboundMessagesTotal, recordCompaction } from '../monitor/metrics.js';
import { replyJobId } from '../queue/names.js';
import type { TurnProducer } from '../queue/producer.js';
import type { RedisClient } from '../redis/client.js';
import { dedupeKey, rateLimitKey } from '../redis/keys.js';
import { runCommand, type CommandDeps, type CommandOptions } from './commands.js';
import type { SessionOps } from '../session/session-ops.js';

/** Who may talk to the bot on a channel: everyone (`*`) or the listed user ids. */
export type AllowList = '*' | readonly string[];

/** How the gateway handled one inbound message. */
export type IngestOutcome = 'accepted' | 'duplicate' | 'denied' | 'rate_limited' | 'too_long' | 'command';

/** What the ingest pipeline needs. */
export interface IngestDeps {
  redis: RedisClient;
  producer: TurnProducer;
  ops: SessionOps;
  commands: Omit<CommandDeps, 'ops'>;
  /** The outbound queue: notices (command answers, refusals) are delivered like replies. */
  outbound: Queue<OutboundMessage>;
  logger: Logger;
  now?: () => number;
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
  command: CommandOptions;
}

/** The one pipeline every channel's messages go through. */
export interface Ingest {
  /**
   * Handles one message: duplicates, allow-list, rate limit, size, commands, hygiene, enqueue.
   * Resolves once the message is durably in Redis (or answered); rejects when it is not, so the
   * platform re-delivers it.
   */
  handle(message: InboundMessage): Promise<IngestOutcome>;
}

/** Creates the ingest pipeline. */
export function createIngest(deps: IngestDeps, options: IngestOptions): Ingest {
  const log = deps.logger.child({ component: 'ingest' });
  const now = deps.now ?? Date.now;
  const notify = (message: InboundMessage, sessionId: string, text: string, tag: string) =>
    deps.outbound.add('notice', toNotice(message, sessionId, text, tag), { jobId: replyJobId([message.id, tag], 'notice'), attempts: 8, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: 1000, removeOnFail: 5000 });

  async function admit(message: InboundMessage, sessionId: string): Promise<IngestOutcome | null> {
    if (!isAllowed(options.allow[message.channel], message.userId)) {
      log.info({ channel: message.channel, userId: message.userId, chatType: message.chatType }, 'unlisted user refused');
      if (message.chatType !== 'group') await notify(message, sessionId, `You are not authorised to use this bot (your ${message.channel} user id is ${message.userId}). Ask its operator to add you.`, 'denied');
      return 'denied';
    }
    if (options.rateLimitPerMinute > 0) {
      const window = Math.floor(now() / 60_000);
      const key = rateLimitKey(message.channel, message.userId, window, options.keyPrefix);
      const count = await deps.redis.incr(key);
      if (count === 1) await deps.redis.expire(key, 120);
      if (count > options.rateLimitPerMinute) {
        const waitS = Math.ceil(((window + 1) * 60_000 - now()) / 1000);
        if (count === options.rateLimitPerMinute + 1) await notify(message, sessionId, `You are sending messages faster than ${options.rateLimitPerMinute} a minute. Wait ${waitS} s, then send this one again.`, 'rate');
        return 'rate_limited';
      }
    }
    if (message.text.length > options.maxMessageChars) {
      await notify(message, sessionId, `Your message has ${message.text.length.toLocaleString('en-US')} characters; the limit is ${options.maxMessageChars.toLocaleString('en-US')}. Please shorten it or split it into several messages.`, 'size');
      return 'too_long';
    }
    return null;
  }

  async function dispatch(message: InboundMessage, sessionId: string): Promise<IngestOutcome> {
    const command = parseCommand(message.text);
    if (command) {
      const reply = await runCommand({ ...deps.commands, ops: deps.ops }, options.command, sessionId, command);
      await notify(message, sessionId, reply, `cmd-${command.name}`);
      return 'command';
    }
    await runHygiene(sessionId, message.channel);
    await deps.producer.submitInbound(message);
    return 'accepted';
  }

  async function runHygiene(sessionId: string, channel: ChannelName): Promise<void> {
    try {
      const result = await deps.ops.hygiene(sessionId);
      if (!result) return;
      hygieneFiringsTotal.inc({ channel });
      recordCompaction({ layer: 'hygiene', ...result });
      log.info({ sessionId, outcome: result.outcome, tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter }, 'hygiene compaction');
    } catch (err) {
      log.warn({ err, sessionId }, 'hygiene compaction failed; dispatching anyway');
    }
  }

  return {
    async handle(message) {
      const sessionId = sessionKeyOf(message, options.groupMode);
      const seen = dedupeKey(message.id, options.keyPrefix);
      const fresh = await deps.redis.set(seen, String(now()), 'EX', options.dedupeTtlSeconds ?? 86_400, 'NX');
      if (fresh === null) {
        inboundMessagesTotal.inc({ channel: message.channel, outcome: 'duplicate' });
        return 'duplicate';
      }
      try {
        const outcome = (await admit(message, sessionId)) ?? (await dispatch(message, sessionId));
        inboundMessagesTotal.inc({ channel: message.channel, outcome });
        log.debug({ sessionId, channel: message.channel, outcome }, 'inbound handled');
        return outcome;
      } catch (err) {
        await deps.redis.del(seen).catch(() => undefined); // not handled: let the platform re-deliver it
        log.error({ err, sessionId, channel: message.channel }, 'inbound message not handled');
        throw err;
      }
    },
  };
}

function isAllowed(list: AllowList | undefined, userId: string): boolean {
  if (list === undefined || list === '*') return true;
  return list.includes('*') || list.includes(userId);
}

function toNotice(message: InboundMessage, sessionId: string, text: string, tag: string): OutboundMessage {
  return {
    id: replyJobId([message.id, tag], 'notice'), sessionId, channel: message.channel, chatId: message.chatId,
    threadId: message.threadId, text, kind: 'notice',
  };
}
