/**
 * The ingest pipeline every channel's messages go through: one ordered list of steps
 * ({@link INGEST_STEPS}), each one function that answers the message or hands it on.
 */
import { MODEL_COMMANDS, parseCommand } from '../core/commands.js';
import { sessionKeyOf, type AllowList, type InboundMessage, type InboundOutcome, type InboundVerdict } from '../core/inbound.js';
import { measureText } from '../core/split.js';
import { createLineThrottle, createOutageLog } from '../log.js';
import { NOOP_METRICS } from '../metrics.js';
import { DEFAULT_SEEN_TTL_SECONDS } from '../redis/ingest.js';
import { rateLimitKey } from '../redis/keys.js';
import { createBackgroundTasks, type IngestContext, type IngestDeps, type IngestOptions, type IngestStep, type Incoming } from './ingest-context.js';
import { acceptIntoInbox, answerCommand, answerUnsupported, countRate, dropRedelivery, refuseOverBudget, refuseTooLong, refuseUnlisted, takeFiles } from './ingest-steps.js';

/** At most one `user rate-limited` line per user in this interval, ms: a user sending without pause cannot flood the log. */
const RATE_LINE_INTERVAL_MS = 60_000;

export type { AllowList, IngestDeps, IngestOptions };

/** How the gateway handled one inbound message. */
export type IngestOutcome = InboundOutcome;

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

/**
 * The pipeline, in order. Each step answers the message (a verdict) or hands it on (null); the
 * last one accepts it. A plain message (no command, no files to fetch) leaves its dedupe, rate
 * count and size verdict to the accept's one script: the steps before it pass it on untouched.
 */
export const INGEST_STEPS: readonly IngestStep[] = [
  refuseUnlisted, // allow-list
  dropRedelivery, // seen before
  countRate, // per sender and per address (commands count only when they call the model)
  refuseTooLong,
  answerCommand,
  refuseOverBudget, // a budget used up: answered from the counters, no turn
  answerUnsupported, // media the bot cannot read
  takeFiles, // download and store attachments
  acceptIntoInbox, // durable; hygiene and the turn follow in the background
];

/** Creates the ingest pipeline. */
export function createIngest(deps: IngestDeps, options: IngestOptions): Ingest {
  const log = deps.logger.child({ component: 'ingest' });
  const ctx: IngestContext = {
    deps, options, log, now: deps.now ?? Date.now, ttl: options.dedupeTtlSeconds ?? DEFAULT_SEEN_TTL_SECONDS,
    metrics: deps.metrics ?? NOOP_METRICS, background: createBackgroundTasks(), outage: createOutageLog(log),
    rateLines: createLineThrottle({ intervalMs: RATE_LINE_INTERVAL_MS, now: deps.now }),
  };
  const receive = async (message: InboundMessage): Promise<InboundVerdict> => {
    const incoming = incomingOf(ctx, message);
    try {
      const verdict = await runSteps(ctx, incoming);
      ctx.metrics.record({ type: 'inbound', channel: message.channel, outcome: verdict.outcome });
      log.debug({ sessionId: incoming.sessionId, channel: message.channel, outcome: verdict.outcome }, 'inbound handled');
      ctx.outage.available();
      return verdict;
    } catch (err) {
      // A Redis outage fails every message: one warning per 30 s, not a line each.
      ctx.outage.error({ err, sessionId: incoming.sessionId, channel: message.channel }, 'inbound message not handled');
      throw err;
    }
  };
  return { receive, handle: async (message) => (await receive(message)).outcome, idle: () => ctx.background.idle() };
}

async function runSteps(ctx: IngestContext, incoming: Incoming): Promise<InboundVerdict> {
  for (const step of INGEST_STEPS) {
    const verdict = await step(ctx, incoming);
    if (verdict) return verdict;
  }
  throw new Error('the ingest pipeline ended without a verdict'); // acceptIntoInbox always gives one
}

/** What the steps need to know of a message, worked out once: its session, command, rate window and size. */
function incomingOf(ctx: IngestContext, message: InboundMessage): Incoming {
  const { deps, options } = ctx;
  const command = message.unsupportedReply === undefined ? parseCommand(message.text) : null;
  const nowMs = ctx.now();
  const window = Math.floor(nowMs / 60_000);
  const senders = [message.userId, ...(message.clientAddress ? [`addr:${message.clientAddress}`] : [])];
  // A command that calls the model counts as a message: else `/btw` sent without pause spends without limit.
  const rate = options.rateLimitPerMinute > 0 && (command === null || MODEL_COMMANDS.includes(command.name))
    ? { limit: { keys: senders.map((sender) => rateLimitKey(message.channel, sender, window, options.keyPrefix)), limit: options.rateLimitPerMinute, ttlSeconds: 120 }, retryAfterMs: (window + 1) * 60_000 - nowMs }
    : null;
  const oneScript = command === null && message.unsupportedReply === undefined && (!deps.attachments || message.attachments.length === 0);
  return { message, sessionId: sessionKeyOf(message, options.groupMode), command, nowMs, rate, chars: measureText(message.text, 'codepoints'), oneScript, attachments: message.attachments };
}
