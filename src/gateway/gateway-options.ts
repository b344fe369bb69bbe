import type { UsageRetention } from '../redis/session-store.js';
import type { BudgetSettings } from '../core/budget.js';
import type { BusyModeDefaults } from '../core/busy-mode.js';
import type { PriceTable } from '../core/models.js';
import type { AllowList, ChannelName, GroupSessionMode } from '../core/inbound.js';
import { DEFAULT_ATTACHMENT_TTL_SECONDS, DEFAULT_MAX_ATTACHMENT_BYTES } from '../core/attachments.js';
import { DEFAULT_COMPRESS_THRESHOLD, DEFAULT_HYGIENE_THRESHOLD } from '../core/compaction/hygiene.js';
import { int, numberIssues, SHARE, SHARED_OPTION_RULES, type NumberRule } from '../core/option-checks.js';
import { DEFAULT_HTTP_TIMEOUTS, httpTimeoutIssues, type HttpTimeouts } from '../monitor/http-timeouts.js';
import { DEFAULT_QUEUE_PREFIX } from '../queue/names.js';
import { DEFAULT_KEY_PREFIX } from '../redis/keys.js';
import { DEFAULT_LEASE_TTL_MS } from '../redis/lease.js';
import { DEFAULT_CHANNEL_LEASE_MS } from './channel-lease.js';
import type { ChannelsOptions } from './channels.js';

/** Options of `startGateway`. Durations in ms; token figures in tokens. */
export interface GatewayOptions {
  /** The endpoint the gateway's summaries use (hygiene, `/compact`) and the agent's models. */
  llm: { baseURL: string; apiKey?: string; model: string; summaryModel?: string };
  /** The model's context window, tokens. */
  contextWindow: number;
  /** Output reserve subtracted from the window before any threshold. Default 0. */
  reservedOutputTokens?: number;
  /** In-loop trigger (shown by `/usage` and used by `/compact`), share of (window − reserve). Default 0.5. */
  threshold?: number;
  /** Hygiene trigger, share of (window − reserve). Default 0.85. */
  hygieneThreshold?: number;
  /** Session key prefix. Default `cg:`. */
  keyPrefix?: string;
  /** BullMQ prefix (no `:`). Default `{cgq}`. */
  queuePrefix?: string;
  /** Shards of the turn and outbound queues (src/queue/sharded.ts). Default 1. */
  queueShards?: number;
  /** Approximate transcript entries kept per session (0: unlimited). Default: the store's. */
  transcriptRetention?: number;
  /** Days the usage rollups are kept (hourly, daily). Default: the store's (14, 400). */
  usageRetention?: UsageRetention;
  /** Group chats: one session per chat or per user. Default `per-chat`. */
  groupMode?: GroupSessionMode;
  /** Who may talk to the bot, per channel. Default everyone (`*`) on every channel. */
  allow?: Readonly<Record<ChannelName, AllowList>>;
  /** Messages per user per minute (0: unlimited). Default 20. */
  rateLimitPerMinute?: number;
  /** Longest accepted message, characters. Default 8000. */
  maxMessageChars?: number;
  /** Address of the HTTP server (web chat, monitor). Default `127.0.0.1`. */
  host?: string;
  /** Port of the HTTP server (0: any free port). Default 8787. */
  port?: number;
  /**
   * Time-outs of the HTTP server, ms: receiving a request's headers, a whole request (body included),
   * and an idle kept-alive connection. Default {@link DEFAULT_HTTP_TIMEOUTS} (10 s, 60 s, 5 s).
   */
  httpTimeouts?: HttpTimeouts;
  /** Bearer token of the monitor; required off loopback. */
  monitorToken?: string;
  /** Session lease while the gateway compacts (renewed while it works), ms. Default 15000. */
  sessionLeaseTtlMs?: number;
  /** The agent's system prompt (counted by hygiene). Default: `DEFAULT_SYSTEM_PROMPT`. */
  systemPrompt?: string;
  /** How long each channel may take to connect (`start`) before the gateway's start fails naming it, ms. Default 30 000. */
  channelStartTimeoutMs?: number;
  /** Largest attachment accepted, bytes. Default 10 MB. */
  maxAttachmentBytes?: number;
  /** How long a message id's seen marker stays in Redis to drop platform re-deliveries, seconds. Default 86 400. */
  seenTtlSeconds?: number;
  /** Spend limits: while one holds for a message's user, chat or the deployment, the gateway answers it at once (no turn). Default: none. */
  budgets?: BudgetSettings;
  /** Model prices adding to the known table (`CHATGATE_PRICES`): the summariser's calls are reserved at these. Default: the table. */
  prices?: PriceTable;
  /** How long attachments' bytes stay in Redis, seconds. Default 86 400. */
  attachmentTtlSeconds?: number;
  /** Model that transcribes voice and audio; unset: such files are refused with "transcription is off". */
  transcribeModel?: string;
  /** Tell the user in one line when hygiene compacted their conversation. Default true. */
  compactionNotice?: boolean;
  /**
   * What a message does when its session's turn is running (`CHATGATE_BUSY_MODE`): `steer` joins the
   * turn before its next model call, `queue` waits for the next turn, `interrupt` stops the turn and
   * starts a new one; per channel where given. A chat's `/mode` wins. Default `steer`.
   */
  busyMode?: BusyModeDefaults;
  /** Users who may decide tool approvals in any group, as `<channel>:<user id>` (`CHATGATE_APPROVAL_ADMINS`). Default none. */
  approvalAdmins?: readonly string[];
  /** How often the gateway expires tool approvals nobody answered in time, ms. Default 5000. */
  approvalSweepIntervalMs?: number;
  /**
   * Lease period of the channel connections that run in one gateway at a time per bot (Telegram
   * polling, Discord), ms: a dead holder's channel is taken over within it. Default 10 000.
   */
  channelLeaseMs?: number;
  /** The channels to build when `deps.channels` is not given. Default: the web chat alone. */
  channels?: Omit<ChannelsOptions, 'host' | 'monitorToken' | 'keyPrefix'>;
  /**
   * Life of the gateway's heartbeat in Redis, ms, renewed every third; also how long a silent
   * worker counts as alive for `/readyz` (each worker beats with its own TTL). Default 15 000.
   */
  heartbeatTtlMs?: number;
  /** chatgate version, shown in the heartbeat. Default `unknown`. */
  version?: string;
  /** Show the workers' partial replies while the model writes (src/live-reply/gateway-live-replies.ts). Default true. */
  liveReplies?: boolean;
  /** Least time between two partial updates in one Telegram or Discord chat (drafts, edits), ms. Default 1000. */
  liveReplyEditIntervalMs?: number;
}

/** The options `startGateway` fills in when they are not given. */
export type GatewayDefaults = Required<Pick<GatewayOptions,
  'reservedOutputTokens' | 'threshold' | 'hygieneThreshold' | 'keyPrefix' | 'queuePrefix' | 'groupMode' | 'allow' |
  'rateLimitPerMinute' | 'maxMessageChars' | 'host' | 'port' | 'sessionLeaseTtlMs' | 'channelStartTimeoutMs' | 'channels' |
  'maxAttachmentBytes' | 'attachmentTtlSeconds' | 'liveReplies' | 'liveReplyEditIntervalMs' | 'channelLeaseMs' | 'httpTimeouts'>>;

/** {@link GatewayOptions} after defaults. */
export type ResolvedGatewayOptions = GatewayOptions & GatewayDefaults;

/** The gateway's defaults: the one place they are written (the configuration's defaults come from here). */
export const GATEWAY_DEFAULTS = Object.freeze({
  reservedOutputTokens: 0,
  threshold: DEFAULT_COMPRESS_THRESHOLD,
  hygieneThreshold: DEFAULT_HYGIENE_THRESHOLD,
  keyPrefix: DEFAULT_KEY_PREFIX,
  queuePrefix: DEFAULT_QUEUE_PREFIX,
  groupMode: 'per-chat',
  allow: { telegram: '*', discord: '*', web: '*', api: '*' },
  rateLimitPerMinute: 20,
  maxMessageChars: 8000,
  host: '127.0.0.1',
  port: 8787,
  httpTimeouts: DEFAULT_HTTP_TIMEOUTS,
  sessionLeaseTtlMs: DEFAULT_LEASE_TTL_MS,
  channelStartTimeoutMs: 30_000,
  channelLeaseMs: DEFAULT_CHANNEL_LEASE_MS,
  channels: {},
  maxAttachmentBytes: DEFAULT_MAX_ATTACHMENT_BYTES,
  attachmentTtlSeconds: DEFAULT_ATTACHMENT_TTL_SECONDS,
  liveReplies: true,
  liveReplyEditIntervalMs: 1000,
} satisfies GatewayDefaults);

const GATEWAY_RULES: Readonly<Record<string, NumberRule>> = {
  ...SHARED_OPTION_RULES,
  hygieneThreshold: SHARE,
  rateLimitPerMinute: int(0),
  maxMessageChars: int(1),
  port: int(0, 65535),
  sessionLeaseTtlMs: int(1),
  channelStartTimeoutMs: int(1),
  maxAttachmentBytes: int(1),
  attachmentTtlSeconds: int(1),
  seenTtlSeconds: int(1),
  liveReplyEditIntervalMs: int(0),
  channelLeaseMs: int(100),
  approvalSweepIntervalMs: int(10),
};

/** Messages for every resolved option that breaks its rule (empty when all are valid). */
export function gatewayOptionIssues(options: ResolvedGatewayOptions): string[] {
  const issues = [...numberIssues(options, GATEWAY_RULES), ...httpTimeoutIssues(options.httpTimeouts)];
  if (options.hygieneThreshold <= options.threshold) issues.push(`\`hygieneThreshold\` must be greater than \`threshold\` (${options.threshold}) (got ${options.hygieneThreshold})`);
  return issues;
}
