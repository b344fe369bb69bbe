import type { BudgetLedger } from '../budget/ledger.js';
/**
 * The ingest pipeline's shared types: its dependencies and options, what every step shares, and
 * one message on its way (src/gateway/ingest.ts runs the steps of ingest-steps.ts).
 */
import type { BusyModeDefaults } from '../core/busy-mode.js';
import type { ChatCommand } from '../core/commands.js';
import type { AllowList, Attachment, ChannelName, GroupSessionMode, InboundMessage, InboundVerdict } from '../core/inbound.js';
import type { LineThrottle, Logger, OutageLog } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { OutboundSink } from '../outbound/outbound-queue.js';
import type { TurnProducer } from '../queue/producer.js';
import type { RedisClient } from '../redis/client.js';
import type { IngestRateLimit } from '../redis/ingest.js';
import type { RetryPort } from '../session/retry-command.js';
import type { SessionOps } from '../session/session-ops.js';
import type { AttachmentIngest } from './attachments.js';
import type { CommandDeps } from './commands.js';
import type { ApprovalCommandDeps } from './approval-commands.js';

/** What the ingest pipeline needs. */
export interface IngestDeps {
  /** A connection that fails fast when Redis is down (so the platform is asked to re-deliver). */
  redis: RedisClient;
  producer: TurnProducer;
  /** Session operations of commands (`/compact` may take its time: it runs in the background). */
  ops: SessionOps;
  /** Session operations of the hygiene check (after the acknowledgement, before the session's turn): bounded. Default `ops`. */
  hygiene?: SessionOps;
  commands: Omit<CommandDeps, 'ops' | 'stop' | 'retry' | 'cancelQuestions'>;
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
  /** Spend limits: a message whose user, chat or deployment has used its budget is answered at once. Absent: no budgets. */
  budget?: { ledger: Pick<BudgetLedger, 'check' | 'state'>; timeZone: string };
  /** `/approve`, `/deny`, `/revoke` and the denials of `/stop` (src/approvals). Absent: those commands are not available. */
  approvals?: ApprovalCommandDeps;
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
  /** What a message does while its session's turn runs, per channel (a chat's `/mode` wins). Default `steer` everywhere. */
  busyMode?: BusyModeDefaults;
}

/** What every step shares: the pipeline's dependencies and options. */
export interface IngestContext {
  deps: IngestDeps;
  options: IngestOptions;
  log: Logger;
  now: () => number;
  /** How long a message id is remembered, seconds. */
  ttl: number;
  metrics: Metrics;
  background: BackgroundTasks;
  /** Failures a Redis outage repeats: one warning per 30 s. */
  outage: OutageLog;
  /** The `user rate-limited` line: one per user per minute. */
  rateLines: LineThrottle;
}

/** One message on its way through the pipeline, and what was worked out of it once, at the start. */
export interface Incoming {
  message: InboundMessage;
  sessionId: string;
  /** The chat command it is, if any. */
  command: ChatCommand | null;
  /** When it arrived, ms since epoch. */
  nowMs: number;
  /** The sender's rate-limit window and the wait until it ends; null when unlimited or a command. */
  rate: { limit: IngestRateLimit; retryAfterMs: number } | null;
  /** Its text's length, code points. */
  chars: number;
  /** Nothing is answered or fetched before its accept: dedupe, rate count and size verdict happen in the accept's one script. */
  oneScript: boolean;
  /** Its files (the stored ones once the `takeFiles` step ran). */
  attachments: Attachment[];
}

/** One step of the pipeline. @returns the verdict that ends the message's way, or null to hand it on. */
export type IngestStep = (ctx: IngestContext, incoming: Incoming) => Promise<InboundVerdict | null>;

/** Per-session background work (hygiene, then the turn): one task at a time per session, tracked for `idle()`. */
export interface BackgroundTasks {
  run(sessionId: string, task: () => Promise<void>): void;
  idle(): Promise<void>;
}

/** Creates the per-session background task runner. */
export function createBackgroundTasks(): BackgroundTasks {
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
