import { DEFAULT_DAILY_DAYS, DEFAULT_HOURLY_DAYS } from './usage/rollup-format.js';
import { z } from 'zod';
import { GATEWAY_DEFAULTS } from './gateway/gateway-options.js';
import { WORKER_DEFAULTS } from '../workers/worker-options.js';
import { DEFAULT_MODEL_TIMEOUT_MS } from './core/retry.js';
import { parseApprovalRules, type ApprovalRule } from './core/approval.js';
import { DEFAULT_HEARTBEAT_TTL_MS } from './redis/heartbeats.js';
import { DEFAULT_SEEN_TTL_SECONDS } from './redis/ingest.js';
import { DEFAULT_TRANSCRIPT_RETENTION } from './redis/transcript.js';
import { CHANNEL_NAMES, DEFAULT_DISCORD_API_ROOT, DEFAULT_TELEGRAM_API_ROOT } from './core/inbound.js';
import { parseBusyModeOption, type BusyModeDefaults } from './core/busy-mode.js';
import { nearestName, parseRuled, ruleText, TOKEN_LIMIT, TURN_USD_CAP, USD_LIMIT, type NumberRule } from './core/option-checks.js';

/** The endpoint used when `OPENAI_BASE_URL` is not set. */
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** One configuration option: its environment variable, parser, rule, default, unit and meaning. */
export interface OptionSpec {
  /** Environment variable (also the key in the `CHATGATE_CONFIG` JSON file). */
  env: string;
  /** Section of the README table and of `.env.example`. */
  group: 'Redis' | 'LLM' | 'Compaction' | 'Workers' | 'Telegram' | 'Discord' | 'Access' | 'Attachments' | 'Tools' | 'HTTP and monitor' | 'Budgets' | 'Runtime';
  /** Parses the trimmed string value. */
  schema: z.ZodType<unknown, string>;
  /** What a valid value is, completing "`ENV` must be …". */
  rule: string;
  /** Default as written in the environment; undefined when the option is unset by default. */
  default?: string;
  /** Unit of the value, when it has one. */
  unit?: string;
  /** One sentence of meaning. */
  doc: string;
  /** Never echoed in messages or listings. */
  secret?: boolean;
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)$/;
const INTEGER = /^[+-]?\d+$/;

/** A decimal number passing `check`. */
function decimal(check: (n: z.ZodNumber) => z.ZodNumber): z.ZodType<number, string> {
  return z.string().regex(DECIMAL).transform(Number).pipe(check(z.number()));
}

/** An integer passing `check`. */
function integer(check: (n: z.ZodNumber) => z.ZodNumber): z.ZodType<number, string> {
  return z.string().regex(INTEGER).transform(Number).pipe(check(z.number().int()));
}

/** A number passing `rule`, read as src/core/option-checks.ts reads it (one rule for the environment and the CLI). */
function ruled(rule: NumberRule): z.ZodType<number, string> {
  return z.string().transform((text, ctx) => {
    const n = parseRuled(text, rule);
    if (n !== undefined) return n;
    ctx.addIssue({ code: 'custom', message: ruleText(rule) });
    return z.NEVER;
  });
}

const TRUE_WORDS = ['1', 'true', 'yes', 'on'];
const BOOL_WORDS = [...TRUE_WORDS, '0', 'false', 'no', 'off'];
const boolean = z
  .string()
  .transform((s) => s.toLowerCase())
  .pipe(z.enum(BOOL_WORDS as [string, ...string[]]))
  .transform((s) => TRUE_WORDS.includes(s));

/** CHATGATE_BUSY_MODE: a busy mode, then optional `<channel>=<mode>` items. */
const busyModeOption = z.string().transform((value, ctx): BusyModeDefaults => {
  const parsed = parseBusyModeOption(value, CHANNEL_NAMES);
  if (!parsed) ctx.addIssue({ code: 'custom', message: 'bad busy mode' });
  return parsed ?? { mode: 'steer' };
});

/** `*` (everyone), `none` (nobody) or a comma-separated list of platform user ids. */
const allowList = z.string().transform((value, ctx): '*' | string[] => {
  if (value === '*') return '*';
  if (value.toLowerCase() === 'none') return [];
  const ids = value.split(',').map((id) => id.trim()).filter((id) => id.length > 0);
  if (ids.length === 0 || ids.some((id) => !/^[\w.@-]+$/.test(id))) ctx.addIssue({ code: 'custom', message: 'bad id' });
  return ids;
});

/** A comma-separated list of `host:port` seeds of a Redis Cluster (a few masters are enough). */
const clusterNodes = z.string().transform((value, ctx): Array<{ host: string; port: number }> => {
  const nodes = value.split(',').map((item) => item.trim()).filter((item) => item.length > 0).map((item) => {
    const match = /^([\w.-]+|\[[\da-fA-F:.]+\]):(\d{1,5})$/.exec(item);
    return match ? { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) } : null;
  });
  if (nodes.length === 0 || nodes.some((node) => node === null || node.port < 1 || node.port > 65535)) ctx.addIssue({ code: 'custom', message: 'bad node' });
  return nodes.filter((node) => node !== null);
});

const shardList = z.string().transform((value, ctx): number[] => {
  const items = value.split(',').map((item) => item.trim()).filter((item) => item.length > 0);
  if (items.length === 0 || items.some((item) => !/^\d{1,3}$/.test(item))) ctx.addIssue({ code: 'custom', message: 'not a list of shard numbers' });
  return items.map(Number);
});
/** `pattern=auto|ask|deny` items, comma-separated (src/core/approval.ts). */
const approvalRules = z.string().transform((value, ctx): ApprovalRule[] => {
  try {
    return parseApprovalRules(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return [];
  }
});

/** `<channel>:<user id>` items, comma-separated. */
const channelUsers = z.string().transform((value, ctx): string[] => {
  const items = value.split(',').map((item) => item.trim()).filter((item) => item.length > 0);
  if (items.some((item) => !/^(telegram|discord|web|api):[\w.@-]+$/.test(item))) ctx.addIssue({ code: 'custom', message: 'not a list of <channel>:<user id>' });
  return items;
});
/** One bearer key of the OpenAI-compatible API and the user it names (CHATGATE_API_KEYS). */
export interface ApiKeyEntry {
  key: string;
  user: string;
}

/** `<key>=<user>` items, comma-separated: keys of 16+ characters, each once; a user may have several keys. */
const apiKeys = z.string().transform((value, ctx): ApiKeyEntry[] => {
  const items = value.split(',').map((item) => item.trim()).filter((item) => item.length > 0);
  const entries = items.map((item) => /^([A-Za-z0-9_.~+/-]{16,256})=([\w.@-]{1,64})$/.exec(item)).map((match) => (match ? { key: match[1]!, user: match[2]! } : null));
  const keys = new Set(entries.map((entry) => entry?.key));
  // The issue's text is never shown (the option is secret): the rule says what is wrong.
  if (entries.length === 0 || entries.some((entry) => entry === null) || keys.size !== entries.length) ctx.addIssue({ code: 'custom', message: 'bad key list' });
  return entries.filter((entry) => entry !== null);
});
const text = z.string().min(1);
const httpUrl = z.url({ protocol: /^https?$/ });
const BUDGET_WHO = { USER: 'each user (`<channel>:<userId>`)', CHAT: 'each chat (session)', DEPLOYMENT: 'the whole deployment' } as const;
const ALLOW_RULE = '`*`, `none` or a comma-separated list of user ids';

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

/** `CHATGATE_BUDGET_<LEVEL>_<DAILY|MONTHLY>_<USD|TOKENS>`: one option per level, period and unit. */
const BUDGET_LIMIT_OPTIONS: OptionSpec[] = (['USER', 'CHAT', 'DEPLOYMENT'] as const).flatMap((level) => (['DAILY', 'MONTHLY'] as const).flatMap((period) => [
  { env: `CHATGATE_BUDGET_${level}_${period}_USD`, group: 'Budgets' as const, schema: ruled(USD_LIMIT), rule: ruleText(USD_LIMIT), unit: 'USD', doc: `Spend limit of ${BUDGET_WHO[level]} per ${period === 'DAILY' ? 'day' : 'month'} (estimated at list prices). Unset: no limit.` },
  { env: `CHATGATE_BUDGET_${level}_${period}_TOKENS`, group: 'Budgets' as const, schema: ruled(TOKEN_LIMIT), rule: ruleText(TOKEN_LIMIT), unit: 'tokens', doc: `Token limit (prompt + completion) of ${BUDGET_WHO[level]} per ${period === 'DAILY' ? 'day' : 'month'}. Unset: no limit.` },
]));
// Defaults are the components' own (written once, in GATEWAY_DEFAULTS and WORKER_DEFAULTS).

/** Every option chatgate reads, in the order of `.env.example`. */
export const OPTION_SPECS: readonly OptionSpec[] = [
  { env: 'REDIS_URL', group: 'Redis', schema: z.url({ protocol: /^rediss?$/ }), rule: 'a redis:// or rediss:// URL', doc: 'Redis to use. Unset: 127.0.0.1:6379 if it answers, else a redis-server from PATH started on a free port with its data in the state folder.' },
  { env: 'REDIS_CLUSTER_NODES', group: 'Redis', schema: clusterNodes, rule: 'a comma-separated list of `host:port` (e.g. `10.0.0.1:7000,10.0.0.2:7000`)', doc: 'Seed nodes of a Redis Cluster to use instead of one Redis (the rest are discovered); not with REDIS_URL.' },
  { env: 'CHATGATE_REDIS_FALLBACK_HOST', group: 'Redis', schema: text, rule: 'a host name', default: '127.0.0.1', doc: 'Address tried when REDIS_URL is unset (test setting).' },
  { env: 'CHATGATE_REDIS_FALLBACK_PORT', group: 'Redis', schema: integer((n) => n.min(1).max(65535)), rule: 'an integer in [1, 65535]', default: '6379', doc: 'Port tried when REDIS_URL is unset (test setting).' },
  { env: 'CHATGATE_KEY_PREFIX', group: 'Redis', schema: z.string().regex(/^[\w.{}:-]*:$/), rule: 'letters, digits, `_.-{}:` ending in `:`', default: GATEWAY_DEFAULTS.keyPrefix, doc: 'Prefix of every Redis key chatgate writes.' },
  { env: 'CHATGATE_QUEUE_PREFIX', group: 'Redis', schema: z.string().regex(/^[\w.{}-]+$/), rule: 'letters, digits and `_.-{}` (no `:`)', default: GATEWAY_DEFAULTS.queuePrefix, doc: 'BullMQ queue prefix, hash-tagged so every queue key lands in one Redis Cluster slot.' },
  { env: 'CHATGATE_QUEUE_SHARDS', group: 'Redis', schema: integer((n) => n.min(1).max(256)), rule: 'an integer in [1, 256]', default: '1', unit: 'shards', doc: 'Shards of the turn and outbound queues, each in its own Cluster slot (hash tag `{cgq-<i>-<salt>}`, the salt spreading the shards evenly over the slots); 1 keeps the single `{cgq}` queues. Every process must use the same value (see docs/sharding.md).' },
  { env: 'OPENAI_BASE_URL', group: 'LLM', schema: httpUrl, rule: 'an http(s) URL', default: DEFAULT_OPENAI_BASE_URL, doc: 'OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, LiteLLM, ...).' },
  { env: 'OPENAI_API_KEY', group: 'LLM', schema: text, rule: 'a non-empty key', secret: true, doc: 'API key of the endpoint (any value for local servers that ignore it).' },
  { env: 'CHATGATE_MODEL', group: 'LLM', schema: z.string().regex(/^[\w.:/@-]+$/), rule: 'a model name', default: 'gpt-4o-mini', doc: 'Model of the agent (`chatgate-demo` with CHATGATE_DEMO).' },
  { env: 'CHATGATE_SUMMARY_MODEL', group: 'LLM', schema: z.string().regex(/^[\w.:/@-]+$/), rule: 'a model name', doc: 'Cheaper model for compaction summaries. Default: CHATGATE_MODEL.' },
  { env: 'CHATGATE_CONTEXT_WINDOW', group: 'LLM', schema: integer((n) => n.min(1024).max(10_000_000)), rule: 'an integer in [1024, 10000000]', unit: 'tokens', doc: 'Context window of the model. Default: from the table of known models; required for others.' },
  { env: 'CHATGATE_MODEL_TIMEOUT_MS', group: 'LLM', schema: integer((n) => n.min(1000).max(600_000)), rule: 'an integer in [1000, 600000]', default: String(DEFAULT_MODEL_TIMEOUT_MS), unit: 'ms', doc: 'Timeout of one model call attempt; a timed-out call is retried (4 times) and then the turn gives up, tells the user and keeps the message for `chatgate retry`.' },
  { env: 'CHATGATE_LIVE_REPLIES', group: 'LLM', schema: boolean, rule: 'true or false', default: String(WORKER_DEFAULTS.liveReplies), doc: 'Live replies: the model call streams and the text so far shows in the chat while it is written (Telegram drafts or an edited message, Discord edits, web chat deltas); false: plain calls, the reply appears when complete.' },
  { env: 'CHATGATE_LIVE_REPLY_EDIT_INTERVAL_MS', group: 'LLM', schema: integer((n) => n.min(250).max(60_000)), rule: 'an integer in [250, 60000]', default: String(GATEWAY_DEFAULTS.liveReplyEditIntervalMs), unit: 'ms', doc: 'Least time between two live-reply updates in one Telegram or Discord chat (slowed down further while the platform rate-limits).' },
  { env: 'CHATGATE_RESERVED_OUTPUT_TOKENS', group: 'Compaction', schema: integer((n) => n.min(0)), rule: 'an integer ≥ 0', default: '4096', unit: 'tokens', doc: 'Output reserve subtracted from the window before any threshold.' },
  { env: 'CHATGATE_THRESHOLD', group: 'Compaction', schema: decimal((n) => n.gt(0).lt(1)), rule: 'a number in (0, 1)', default: String(WORKER_DEFAULTS.threshold), unit: 'fraction of the window', doc: 'In-loop compressor trigger: compact before a model call at this fill.' },
  { env: 'CHATGATE_HYGIENE_THRESHOLD', group: 'Compaction', schema: decimal((n) => n.gt(0).lt(1)), rule: 'a number in (0, 1)', default: String(GATEWAY_DEFAULTS.hygieneThreshold), unit: 'fraction of the window', doc: 'Gateway hygiene trigger: compact an idle session before dispatch at this fill.' },
  { env: 'CHATGATE_COMPACTION_NOTICE', group: 'Compaction', schema: boolean, rule: 'true or false', default: 'true', doc: 'Tell the user in one short line when an automatic compaction (hygiene or in-loop) shortened their conversation.' },
  { env: 'CHATGATE_IDLE_COMPACT_SECONDS', group: 'Compaction', schema: integer((n) => n.min(0).max(86_400)), rule: 'an integer in [0, 86400]', default: String(WORKER_DEFAULTS.idleCompactSeconds), unit: 's (0: off)', doc: 'A session quiet for this long whose next request is over the in-loop trigger is compacted in the background by a worker, so the next message does not wait for a summary; a message arriving first wins.' },
  { env: 'CHATGATE_BUSY_MODE', group: 'Workers', schema: busyModeOption, rule: '`steer`, `queue` or `interrupt`, optionally followed by per-channel modes (e.g. `steer,discord=queue`)', default: 'steer', doc: 'What a message does while its chat\'s turn runs: `steer` joins the turn before its next model call, `queue` waits for the next turn, `interrupt` stops the turn (as /stop) and answers the new message. Each chat can choose with /mode.' },
  { env: 'CHATGATE_MAX_MODEL_CALLS', group: 'Workers', schema: integer((n) => n.min(1).max(100)), rule: 'an integer in [1, 100]', default: String(WORKER_DEFAULTS.maxModelCalls), unit: 'calls per turn', doc: 'Maximum model calls in one turn of the tool loop.' },
  { env: 'CHATGATE_WORKER_CONCURRENCY', group: 'Workers', schema: integer((n) => n.min(1).max(256)), rule: 'an integer in [1, 256]', default: String(WORKER_DEFAULTS.concurrency), unit: 'turns', doc: 'Turns one worker process runs at once (different sessions).' },
  { env: 'CHATGATE_WORKER_SHARDS', group: 'Workers', schema: shardList, rule: 'a comma-separated list of shard numbers (e.g. `0,1`)', doc: 'Queue shards this worker takes turns from. Default: every shard.' },
  { env: 'CHATGATE_LEASE_TTL_MS', group: 'Workers', schema: integer((n) => n.min(1000).max(600_000)), rule: 'an integer in [1000, 600000]', default: String(WORKER_DEFAULTS.leaseTtlMs), unit: 'ms', doc: 'Session lease of a running turn, renewed every third of it; a dead worker\'s session frees after this.' },
  { env: 'CHATGATE_TURN_LOCK_MS', group: 'Workers', schema: integer((n) => n.min(1000).max(600_000)), rule: 'an integer in [1000, 600000]', default: String(WORKER_DEFAULTS.lockDurationMs), unit: 'ms', doc: 'BullMQ lock of a turn job; a dead worker\'s turn is retried by another after about this long.' },
  { env: 'TELEGRAM_BOT_TOKEN', group: 'Telegram', schema: z.string().regex(/^\d+:[\w-]+$/), rule: 'a bot token like `123456:ABC-DEF…` from @BotFather', secret: true, doc: 'Enables the Telegram channel.' },
  { env: 'TELEGRAM_API_ROOT', group: 'Telegram', schema: httpUrl, rule: 'an http(s) URL', default: DEFAULT_TELEGRAM_API_ROOT, doc: 'Bot API root (a local Bot API server or a proxy).' },
  { env: 'TELEGRAM_WEBHOOK_URL', group: 'Telegram', schema: z.url({ protocol: /^https$/ }), rule: 'an https URL', doc: 'Public webhook URL; unset: long polling.' },
  { env: 'TELEGRAM_WEBHOOK_SECRET', group: 'Telegram', schema: z.string().regex(/^[\w-]{1,256}$/), rule: '1-256 characters of `A-Za-z0-9_-`', secret: true, doc: 'Secret token Telegram sends with each webhook call; required with TELEGRAM_WEBHOOK_URL.' },
  { env: 'TELEGRAM_GROUP_MODE', group: 'Telegram', schema: z.enum(['per-chat', 'per-user']), rule: '`per-chat` or `per-user`', default: GATEWAY_DEFAULTS.groupMode, doc: 'Sessions in group chats: one per chat or one per user.' },
  { env: 'CHATGATE_GROUP_TRIGGER', group: 'Access', schema: z.enum(['mention', 'always']), rule: '`mention` or `always`', default: 'mention', doc: 'When the bot answers in groups and guild channels: when mentioned, replied to or commanded, or to every message it can read.' },
  { env: 'DISCORD_API_ROOT', group: 'Discord', schema: httpUrl, rule: 'an http(s) URL', default: DEFAULT_DISCORD_API_ROOT, doc: 'Discord REST API root without the version (discord.js `rest.api`; a proxy, or a test server).' },
  { env: 'DISCORD_BOT_TOKEN', group: 'Discord', schema: z.string().regex(/^[\w.-]{20,}$/), rule: 'a Discord bot token', secret: true, doc: 'Enables the Discord channel.' },
  { env: 'CHATGATE_ALLOW_TELEGRAM', group: 'Access', schema: allowList, rule: ALLOW_RULE, default: '*', doc: 'Telegram user ids allowed to talk to the bot.' },
  { env: 'CHATGATE_ALLOW_DISCORD', group: 'Access', schema: allowList, rule: ALLOW_RULE, default: '*', doc: 'Discord user ids allowed to talk to the bot.' },
  { env: 'CHATGATE_ALLOW_WEB', group: 'Access', schema: allowList, rule: ALLOW_RULE, default: '*', doc: 'Web chat user ids allowed to talk to the bot. The page chooses its own id, so this is no access control: protect the web chat with CHATGATE_MONITOR_TOKEN off loopback.' },
  { env: 'CHATGATE_ALLOW_API', group: 'Access', schema: allowList, rule: ALLOW_RULE, default: '*', doc: 'Users of the OpenAI-compatible API (the names CHATGATE_API_KEYS gives its keys) allowed to talk to the bot.' },
  { env: 'CHATGATE_API_KEYS', group: 'Access', schema: apiKeys, secret: true, rule: 'a comma-separated list of `<key>=<user>` (e.g. `sk-alice-0123456789abcdef=alice`): each key 16–256 characters of `A-Za-z0-9_.~+/-` and given once, each user 1–64 characters of `A-Za-z0-9_.@-`', doc: 'Enables the OpenAI-compatible API (`/v1/chat/completions`, `/v1/models`) on the HTTP server: bearer keys, each naming the user its requests come from (allow-list, rate limit and budgets apply to that user). Unset: no API.' },
  { env: 'CHATGATE_RATE_LIMIT_PER_MINUTE', group: 'Access', schema: integer((n) => n.min(0).max(10_000)), rule: 'an integer in [0, 10000]', default: String(GATEWAY_DEFAULTS.rateLimitPerMinute), unit: 'messages per user per minute', doc: "Per-user rate limit at the gateway (0: no limit); chat commands count only when they call the model (`/btw`, `/compact`, `/retry`), and every refused message is answered. The web chat answers 429 with Retry-After at once, and its limit also holds per client address, an IPv6 address by its /64 (web user ids are chosen by the page; behind a proxy every client shares the proxy's address)." },
  { env: 'CHATGATE_MAX_MESSAGE_CHARS', group: 'Access', schema: integer((n) => n.min(1).max(1_000_000)), rule: 'an integer in [1, 1000000]', default: String(GATEWAY_DEFAULTS.maxMessageChars), unit: 'characters', doc: 'Longer inbound messages are refused.' },
  { env: 'CHATGATE_MAX_ATTACHMENT_BYTES', group: 'Attachments', schema: integer((n) => n.min(1024).max(100 * 1024 * 1024)), rule: 'an integer in [1024, 104857600]', default: String(GATEWAY_DEFAULTS.maxAttachmentBytes), unit: 'bytes', doc: 'Largest file (image, document, voice) accepted; larger ones are refused with a message, before downloading when the platform tells the size. Telegram\'s cloud Bot API serves bots files up to 20 MB.' },
  { env: 'CHATGATE_ATTACHMENT_TTL_SECONDS', group: 'Attachments', schema: integer((n) => n.min(60).max(30 * 86_400)), rule: 'an integer in [60, 2592000]', default: String(GATEWAY_DEFAULTS.attachmentTtlSeconds), unit: 's', doc: 'How long the bytes of a file stay in Redis (the model sees an image again while they do; later it is a placeholder).' },
  { env: 'CHATGATE_VISION', group: 'Attachments', schema: boolean, rule: 'true or false', doc: 'Whether the model accepts images. Default: from the table of known vision models (gpt-4o*, gpt-4.1*, gpt-5*, claude-*, gemini-*, llava, qwen*-vl …).' },
  { env: 'CHATGATE_TOOL_APPROVAL', group: 'Tools', schema: approvalRules, rule: 'comma-separated `tool=auto|ask|deny` items; `*` and `?` match any characters or one (e.g. `mcp__*__write_*=ask,send_email=deny`)', doc: 'Approval of tool calls by tool name, ahead of what each tool declares: `auto` runs, `ask` asks the user in the chat first (Approve / Always in this chat / Deny), `deny` is never offered to the model. The first matching item decides. Default: each tool\'s own (built-ins `auto`).' },
  { env: 'CHATGATE_APPROVAL_TIMEOUT_SECONDS', group: 'Tools', schema: integer((n) => n.min(10).max(86_400)), rule: 'an integer in [10, 86400]', default: '600', unit: 's', doc: 'How long a tool call the user is asked about waits for a decision; then it expires, does not run, and the model is told so.' },
  { env: 'CHATGATE_APPROVAL_ADMINS', group: 'Tools', schema: channelUsers, rule: 'a comma-separated list of `<channel>:<user id>` (e.g. `telegram:123,discord:456`)', doc: 'Users who may decide tool approvals in any group chat. In groups, otherwise only the user whose message started the turn may decide.' },
  { env: 'CHATGATE_TRANSCRIBE_MODEL', group: 'Attachments', schema: z.string().regex(/^[\w.:/@-]+$/), rule: 'a model name', doc: 'Model of the endpoint\'s /audio/transcriptions (e.g. whisper-1, gpt-4o-mini-transcribe) for voice messages and audio files. Unset: transcription is off and the user is told so.' },
  { env: 'CHATGATE_MCP_CONFIG', group: 'Tools', schema: text, rule: 'a file path', doc: 'JSON file of MCP servers whose tools the agent gets (`{"mcpServers": {...}}`, the Claude Desktop / Cursor shape; see docs/operating.md). Unset: `chatgate.mcp.json` in the working directory if it exists, else none.' },
  { env: 'CHATGATE_HTTP_HOST', group: 'HTTP and monitor', schema: text, rule: 'a host name or IP address', default: GATEWAY_DEFAULTS.host, doc: 'Address of the HTTP server (web chat, monitor, dashboard).' },
  { env: 'CHATGATE_HTTP_PORT', group: 'HTTP and monitor', schema: integer((n) => n.min(0).max(65535)), rule: 'an integer in [0, 65535]', default: String(GATEWAY_DEFAULTS.port), doc: 'Port of the HTTP server (0: any free port).' },
  { env: 'CHATGATE_WORKER_HTTP_PORT', group: 'HTTP and monitor', schema: integer((n) => n.min(0).max(65535)), rule: 'an integer in [0, 65535]', doc: 'Port of a worker-only process\'s /healthz, /readyz and /metrics, on CHATGATE_HTTP_HOST (0: any free port). Unset: a `chatgate worker` serves no HTTP, so it never takes the gateway\'s CHATGATE_HTTP_PORT.' },
  { env: 'CHATGATE_HTTP_HEADERS_TIMEOUT_MS', group: 'HTTP and monitor', schema: integer((n) => n.min(100).max(600_000)), rule: 'an integer in [100, 600000]', default: String(GATEWAY_DEFAULTS.httpTimeouts.headersTimeoutMs), unit: 'ms', doc: 'Time a client has to send a request\'s headers; a slower one is answered 408 and disconnected.' },
  { env: 'CHATGATE_HTTP_REQUEST_TIMEOUT_MS', group: 'HTTP and monitor', schema: integer((n) => n.min(100).max(3_600_000)), rule: 'an integer in [100, 3600000]', default: String(GATEWAY_DEFAULTS.httpTimeouts.requestTimeoutMs), unit: 'ms', doc: 'Time a client has to send a whole request, body included (a web chat upload of CHATGATE_MAX_ATTACHMENT_BYTES); a slower one is answered 408 and disconnected, which frees its upload slot. Answers (long polls, event streams) are not bounded by it.' },
  { env: 'CHATGATE_HTTP_KEEP_ALIVE_TIMEOUT_MS', group: 'HTTP and monitor', schema: integer((n) => n.min(100).max(600_000)), rule: 'an integer in [100, 600000]', default: String(GATEWAY_DEFAULTS.httpTimeouts.keepAliveTimeoutMs), unit: 'ms', doc: 'How long a kept-alive connection may stay idle after an answer before it is closed.' },
  { env: 'CHATGATE_MONITOR_TOKEN', group: 'HTTP and monitor', schema: z.string().regex(/^\S{16,}$/), rule: 'at least 16 characters without spaces', secret: true, doc: 'Token of the monitor (dashboard, API, metrics), of the web chat off loopback and of the workers\' /metrics; required when CHATGATE_HTTP_HOST is not loopback.' },
  { env: 'CHATGATE_PRICES', group: 'Budgets', schema: text, rule: 'a file path', doc: 'JSON file of model prices adding to or overriding the table of known models: `{ "<model or pattern*>": { "input": 0.15, "output": 0.6, "cachedInput": 0.075 } }`, USD per 1M tokens. A model without a price counts tokens only ("price unknown", never $0).' },
  ...BUDGET_LIMIT_OPTIONS,
  { env: 'CHATGATE_BUDGET_TURN_MAX_USD', group: 'Budgets', schema: ruled(TURN_USD_CAP), rule: ruleText(TURN_USD_CAP), unit: 'USD', doc: 'Cap of one turn (all its model calls, summaries included), against tool loops; the turn ends with a message. Unset: no cap.' },
  { env: 'CHATGATE_BUDGET_TURN_MAX_TOKENS', group: 'Budgets', schema: integer((n) => n.min(1).max(Number.MAX_SAFE_INTEGER)), rule: `an integer in [1, ${Number.MAX_SAFE_INTEGER}]`, unit: 'tokens', doc: 'Cap of one turn in tokens (prompt and completion of all its model calls). Unset: no cap.' },
  { env: 'CHATGATE_BUDGET_TIMEZONE', group: 'Budgets', schema: z.string().refine(isTimeZone), rule: 'an IANA time zone (e.g. `Europe/Berlin`)', default: 'UTC', doc: 'Where budget days and months start.' },
  { env: 'CHATGATE_BUDGET_NOTICE_PERCENT', group: 'Budgets', schema: integer((n) => n.min(1).max(99)), rule: 'an integer in [1, 99]', default: '80', unit: '%', doc: 'The user is told once when a limit reaches this share.' },
  { env: 'CHATGATE_BUDGETS_FILE', group: 'Budgets', schema: text, rule: 'a file path', doc: 'JSON file of per-user limits replacing the user level\'s: `{ "version": 1, "users": { "telegram:42": "unlimited", "discord:7": { "dailyUsd": 5, "monthlyTokens": 2000000 } } }`. `chatgate budgets set` (stored in Redis) wins over it.' },
  { env: 'CHATGATE_ALERT_WEBHOOK_URL', group: 'Budgets', schema: httpUrl, rule: 'an http(s) URL', secret: true, doc: 'Where a budget limit at its notice share or used up is POSTed as JSON (`{ "version": 1, "type": "budget.near" | "budget.exhausted", "level", "subject", "period", "unit", "limit", "used", "resetsAt", "model", "channel", "at" }; an exhausted event with `used` below `limit` is a limit too low for another call), once per limit and period; retried with backoff (5 attempts), never holding a turn. Unset: logged at warn and counted in the metrics only.' },
  { env: 'CHATGATE_STATE_DIR', group: 'Runtime', schema: text, rule: 'a directory path', default: '.state', doc: 'Local state folder (the embedded Redis keeps its data here).' },
  { env: 'CHATGATE_LOG_LEVEL', group: 'Runtime', schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), rule: 'one of fatal, error, warn, info, debug, trace, silent', default: 'info', doc: 'Minimum log level.' },
  { env: 'CHATGATE_LOG_FORMAT', group: 'Runtime', schema: z.enum(['auto', 'pretty', 'json']), rule: 'one of auto, pretty, json', default: 'auto', doc: 'Log lines as coloured text for a person (`pretty`) or JSON lines for machines (`json`); `auto`: pretty when stdout is a terminal, else JSON.' },
  { env: 'CHATGATE_HEARTBEAT_TTL_MS', group: 'Runtime', schema: integer((n) => n.min(1000).max(600_000)), rule: 'an integer in [1000, 600000]', default: String(DEFAULT_HEARTBEAT_TTL_MS), unit: 'ms', doc: 'Gateways and workers write a heartbeat into Redis every third of this; one silent for this long counts as dead (`chatgate status`, `/readyz`).' },
  { env: 'CHATGATE_CHANNEL_START_TIMEOUT_MS', group: 'Runtime', schema: integer((n) => n.min(100).max(600_000)), rule: 'an integer in [100, 600000]', default: String(GATEWAY_DEFAULTS.channelStartTimeoutMs), unit: 'ms', doc: 'How long each channel may take to connect at start; then the start fails naming it.' },
  { env: 'CHATGATE_CHANNEL_LEASE_MS', group: 'Runtime', schema: integer((n) => n.min(3000).max(600_000)), rule: 'an integer in [3000, 600000]', default: String(GATEWAY_DEFAULTS.channelLeaseMs), unit: 'ms', doc: 'Several gateways: Telegram polling and the Discord connection run in the one holding this lease (renewed every fifth of it); a dead holder\'s channel is taken over within it (docs/scaling.md).' },
  { env: 'CHATGATE_TRANSCRIPT_MAXLEN', group: 'Runtime', schema: integer((n) => n.min(0)), rule: 'an integer ≥ 0', default: String(DEFAULT_TRANSCRIPT_RETENTION), unit: 'entries (0: unlimited)', doc: 'Approximate cap of each session transcript stream.' },
  { env: 'CHATGATE_USAGE_HOURLY_DAYS', group: 'Runtime', schema: integer((n) => n.min(1).max(400)), rule: 'an integer in [1, 400]', default: String(DEFAULT_HOURLY_DAYS), unit: 'days', doc: 'How long the hourly usage rollups (per session, model and user) are kept (`chatgate usage --since 24h`).' },
  { env: 'CHATGATE_USAGE_DAILY_DAYS', group: 'Runtime', schema: integer((n) => n.min(1).max(3660)), rule: 'an integer in [1, 3660]', default: String(DEFAULT_DAILY_DAYS), unit: 'days', doc: 'How long the daily usage rollups are kept (`chatgate usage --since 30d`, the dashboard overview).' },
  { env: 'CHATGATE_SEEN_TTL_SECONDS', group: 'Runtime', schema: integer((n) => n.min(300).max(30 * 86_400)), rule: 'an integer in [300, 2592000]', default: String(DEFAULT_SEEN_TTL_SECONDS), unit: 's', doc: 'How long each inbound message id is remembered (one small key a message, ~140 B) so a platform re-delivery is dropped; a re-delivery after it is answered again. Lower it to bound Redis memory at high message rates (docs/scaling.md).' },
  { env: 'CHATGATE_DEMO', group: 'Runtime', schema: boolean, rule: 'true or false', default: 'false', doc: 'Use the built-in offline demo model instead of an LLM endpoint (`chatgate start --demo`).' },
  { env: 'CHATGATE_DEMO_WORD_DELAY_MS', group: 'Runtime', schema: integer((n) => n.min(0).max(1000)), rule: 'an integer in [0, 1000]', default: '25', unit: 'ms', doc: 'Demo mode: pause between two words of a streamed demo answer, so the reply is seen being written (0: at once).' },
  { env: 'CHATGATE_CONFIG', group: 'Runtime', schema: text, rule: 'a file path', doc: 'Optional JSON file of options (keys as above); the environment wins over it.' },
];

/**
 * Variables of `env` that look like a misspelt option (`CHATGATE_MODLE`, `OPENAI_API_KY`), each as
 * "`CHATGATE_MODLE` is not a chatgate option (did you mean `CHATGATE_MODEL`?)". Only names in an
 * option's family (`CHATGATE_`, `OPENAI_`, `TELEGRAM_`, …) close to an option are named: a typo
 * is otherwise ignored without a word, and other programs' variables are not chatgate's business.
 */
export function misspeltOptionWarnings(env: Readonly<Record<string, string | undefined>>): string[] {
  const names = OPTION_SPECS.map((spec) => spec.env);
  const families = new Set(names.map(familyOf));
  return Object.keys(env).filter((key) => families.has(familyOf(key)) && !names.includes(key)).flatMap((key) => {
    const near = nearestName(key, names);
    return near ? [`\`${key}\` is not a chatgate option (did you mean \`${near}\`?)`] : [];
  });
}

function familyOf(name: string): string {
  return name.split('_', 1)[0]!;
}
