import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { isLoopbackHost } from './monitor/hosts.js';
import type { AllowList } from './core/inbound.js';
import type { ApprovalRule } from './core/approval.js';
import { DEMO_MODEL, lookupModel, pricingOf, type ModelPricing, type PriceTable } from './core/models.js';
import type { BudgetSettings } from './core/budget.js';
import type { BusyModeDefaults } from './core/busy-mode.js';
import { buildBudgets, readPricesFile } from './config-budgets.js';
import { ConfigError } from './errors.js';
import { OPTION_SPECS, type ApiKeyEntry, type OptionSpec } from './config-options.js';
import { loadMcpConfig, type McpConfig } from '../workers/tools/mcp/config.js';

export { DEMO_MODEL, isLoopbackHost };
export type { AllowList };

/**
 * The resolved configuration shared by `chatgate start`, `gateway` and `worker`. Frozen. Built only
 * by {@link loadConfig}; every option and its default is listed in `.env.example`.
 */
export interface Config {
  redis: {
    /** REDIS_URL; undefined: try the fallback address, then start a local redis-server. */
    url?: string;
    /** REDIS_CLUSTER_NODES: seeds of a Redis Cluster (never with `url`); undefined: one Redis. */
    clusterNodes?: ReadonlyArray<{ host: string; port: number }>;
    fallbackHost: string;
    fallbackPort: number;
    /** Prefix of every key, e.g. `cg:`. */
    keyPrefix: string;
    /** BullMQ prefix (no `:`). */
    queuePrefix: string;
    /** CHATGATE_QUEUE_SHARDS: shards of the turn and outbound queues. */
    queueShards: number;
  };
  llm: {
    baseUrl: string;
    apiKey?: string;
    model: string;
    /** Model of compaction summaries (defaults to `model`). */
    summaryModel: string;
    /** Context window of `model`, tokens. */
    contextWindow: number;
    /** Where the window came from. */
    contextWindowSource: 'config' | 'table';
    /** List price of `model` per 1M tokens, when known (CHATGATE_PRICES, else the table). */
    pricing?: ModelPricing;
    /** CHATGATE_PRICES: prices adding to or overriding the table of known models. */
    prices: PriceTable;
    /** Maximum model calls per turn. */
    maxModelCalls: number;
    /** Timeout of one model call attempt, ms. */
    timeoutMs: number;
  };
  /** Live replies (the text so far shown while the model writes). */
  liveReplies: {
    enabled: boolean;
    /** Least time between two partial updates in one Telegram or Discord chat, ms. */
    editIntervalMs: number;
  };
  compaction: {
    /** Output reserve subtracted from the window before any threshold, tokens. */
    reservedOutputTokens: number;
    /** In-loop compressor trigger, fraction of the window. */
    threshold: number;
    /** Gateway hygiene trigger, fraction of the window. */
    hygieneThreshold: number;
    /** Tell the user in one line when an automatic compaction ran (CHATGATE_COMPACTION_NOTICE). */
    notice: boolean;
    /** CHATGATE_IDLE_COMPACT_SECONDS: a session quiet this long above the in-loop trigger is compacted in the background; 0: off. */
    idleSeconds: number;
  };
  workers: {
    concurrency: number;
    /** CHATGATE_WORKER_SHARDS: the queue shards a worker takes turns from; undefined: every shard. */
    shards?: readonly number[];
    /** Session lease of a running turn, ms. */
    leaseTtlMs: number;
    /** BullMQ lock of a turn job, ms. */
    turnLockMs: number;
  };
  telegram?: {
    token: string;
    /** Bot API root. */
    apiRoot: string;
    webhookUrl?: string;
    webhookSecret?: string;
  };
  /** CHATGATE_BUSY_MODE: what a message does while its chat's turn runs, per channel (a chat's /mode wins). */
  busyMode: BusyModeDefaults;
  /** Group chats: one session per chat or per user. Applies to every channel. */
  groupMode: 'per-chat' | 'per-user';
  /** When the bot answers in groups and guild channels. */
  groupTrigger: 'mention' | 'always';
  discord?: {
    token: string;
    /** REST API root without the version (discord.js `rest.api`). */
    apiRoot: string;
  };
  access: {
    allow: { telegram: AllowList; discord: AllowList; web: AllowList; api: AllowList };
    /** CHATGATE_API_KEYS: the OpenAI-compatible API's bearer keys and their users; undefined: no API. */
    apiKeys?: readonly ApiKeyEntry[];
    rateLimitPerMinute: number;
    maxMessageChars: number;
  };
  /** Approvals of tool calls. */
  approvals: {
    /** CHATGATE_TOOL_APPROVAL: the operator's rules, first match decides. */
    rules: readonly ApprovalRule[];
    /** CHATGATE_APPROVAL_TIMEOUT_SECONDS. */
    timeoutSeconds: number;
    /** CHATGATE_APPROVAL_ADMINS, as `<channel>:<user id>`. */
    admins: readonly string[];
  };
  attachments: {
    /** Largest file accepted, bytes. */
    maxBytes: number;
    /** How long files' bytes stay in Redis, seconds. */
    ttlSeconds: number;
    /** CHATGATE_VISION; undefined: the table of known vision models decides. */
    vision?: boolean;
    /** Model of /audio/transcriptions; undefined: transcription is off. */
    transcribeModel?: string;
  };
  http: {
    host: string;
    port: number;
    /** Bearer token of the monitor; always set when `host` is not loopback. */
    monitorToken?: string;
    /** Whether `host` is a loopback address. */
    loopback: boolean;
    /** CHATGATE_WORKER_HTTP_PORT: port of a worker-only process's health and metrics; undefined: none. */
    workerPort?: number;
    /** CHATGATE_HTTP_HEADERS_TIMEOUT_MS, CHATGATE_HTTP_REQUEST_TIMEOUT_MS, CHATGATE_HTTP_KEEP_ALIVE_TIMEOUT_MS. */
    timeouts: { headersTimeoutMs: number; requestTimeoutMs: number; keepAliveTimeoutMs: number };
  };
  stateDir: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `pretty`, `json`, or `auto` (pretty when stdout is a terminal). */
  logFormat: 'auto' | 'pretty' | 'json';
  /** Spend limits (CHATGATE_BUDGET_*, CHATGATE_BUDGETS_FILE); none by default. */
  budgets: BudgetSettings;
  /** A gateway's or worker's heartbeat lives this long in Redis (renewed every third of it), ms. */
  heartbeatTtlMs: number;
  /** Approximate cap of each transcript stream, entries; 0: unlimited. */
  transcriptMaxLen: number;
  /** Days the usage rollups are kept: hourly and daily (CHATGATE_USAGE_HOURLY_DAYS, _DAILY_DAYS). */
  usageRetention: { hourlyDays: number; dailyDays: number };
  /** How long a message's seen marker (re-delivery guard) stays in Redis, seconds. */
  seenTtlSeconds: number;
  /** How long each channel may take to connect at start, ms. */
  channelStartTimeoutMs: number;
  /** Lease period of Telegram polling and the Discord connection among several gateways, ms. */
  channelLeaseMs: number;
  /** Run against the built-in offline demo model. */
  demo: boolean;
  /** Demo mode: pause between two words of a streamed answer, ms. */
  demoWordDelayMs: number;
  /** The JSON config file read, if any. */
  configFile?: string;
  /** MCP servers whose tools the agent gets (CHATGATE_MCP_CONFIG, else `chatgate.mcp.json` in the working directory). */
  mcp: McpConfig;
}

/** One row of the option listing (README table, `.env.example`). */
export interface OptionDescription {
  env: string;
  group: string;
  /** Default as written in the environment; undefined when unset by default. */
  default?: string;
  unit?: string;
  /** What a valid value is. */
  rule: string;
  doc: string;
  secret: boolean;
}

type RawEnv = Record<string, string | undefined>;

/**
 * Reads and validates the configuration from `env` (default `process.env`) and the optional JSON
 * file named by `CHATGATE_CONFIG` (the environment wins over the file). Empty values count as unset.
 * @throws ConfigError with one message per bad option, naming the variable and the rule.
 */
export function loadConfig(env: Readonly<RawEnv> = process.env): Config {
  const raw = mergeSources(env);
  const schema = z.object(Object.fromEntries(OPTION_SPECS.map((spec) => [spec.env, spec.schema.optional()])));
  const result = schema.safeParse(withDefaults(raw));
  // The MCP file's problems are listed with the options' in the one error.
  const mcp = loadMcpConfig(raw.CHATGATE_MCP_CONFIG, env, process.cwd());
  if (!result.success) throw new ConfigError([...describeIssues(result.error.issues, raw), ...mcp.issues]);
  const fileIssues: string[] = [];
  const config = buildConfig(result.data as Record<string, unknown>, mcp.config, fileIssues);
  const issues = [...fileIssues, ...crossChecks(config, raw), ...mcp.issues];
  if (issues.length > 0) throw new ConfigError(issues);
  return deepFreeze(config);
}

/**
 * The options `env` and the `CHATGATE_CONFIG` file it names set (non-empty), as {@link loadConfig}
 * reads them: what was chosen rather than defaulted. @throws ConfigError when the file cannot be read.
 */
export function setOptionNames(env: Readonly<RawEnv> = process.env): Set<string> {
  return new Set(Object.keys(mergeSources(env)));
}

/** Every option with its default, unit, rule and meaning, in listing order. */
export function describeConfig(): OptionDescription[] {
  return OPTION_SPECS.map((spec) => ({
    env: spec.env,
    group: spec.group,
    default: spec.default,
    unit: spec.unit,
    rule: spec.rule,
    doc: spec.doc,
    secret: spec.secret === true,
  }));
}

/** The text of `.env.example`: every option, commented, grouped, with default, unit and meaning. */
export function renderEnvExample(): string {
  const lines = ['# chatgate configuration. Copy to .env; every line is optional. Generated from src/config-options.ts.'];
  let group = '';
  for (const option of describeConfig()) {
    if (option.group !== group) {
      group = option.group;
      lines.push('', `# --- ${group} ---`);
    }
    const facts = [option.unit && `unit: ${option.unit}`, `rule: ${option.rule}`].filter(Boolean).join('; ');
    lines.push(`# ${option.doc} (${facts})`, `# ${option.env}=${option.default ?? ''}`);
  }
  return `${lines.join('\n')}\n`;
}

/** A Markdown table of every option (for the README). */
export function renderConfigTable(): string {
  const rows = describeConfig().map((o) => {
    const dflt = o.default === undefined ? '—' : `\`${o.default}\``;
    return `| \`${o.env}\` | ${dflt} | ${o.unit ?? ''} | ${o.doc} |`;
  });
  return ['| option | default | unit | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

function mergeSources(env: Readonly<RawEnv>): RawEnv {
  const fromEnv = pickKnown(env);
  const file = fromEnv.CHATGATE_CONFIG;
  return file ? { ...readConfigFile(file), ...fromEnv } : fromEnv;
}

function pickKnown(source: Readonly<Record<string, unknown>>): RawEnv {
  const out: RawEnv = {};
  for (const spec of OPTION_SPECS) {
    const value = source[spec.env];
    if (value === undefined || value === null) continue;
    const str = String(value).trim();
    if (str !== '') out[spec.env] = str;
  }
  return out;
}

function readConfigFile(path: string): RawEnv {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new ConfigError([`\`CHATGATE_CONFIG\` must name a readable JSON file (${path}: ${why})`]);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError([`\`CHATGATE_CONFIG\` must name a JSON file holding an object (got ${path})`]);
  }
  const record = parsed as Record<string, unknown>;
  const unknownKeys = Object.keys(record).filter((key) => !OPTION_SPECS.some((spec) => spec.env === key));
  if (unknownKeys.length > 0) {
    throw new ConfigError(unknownKeys.map((key) => `\`${key}\` in ${path} is not a chatgate option`));
  }
  return pickKnown(record);
}

function withDefaults(raw: RawEnv): RawEnv {
  const out: RawEnv = { ...raw };
  const demo = /^(1|true|yes|on)$/i.test(raw.CHATGATE_DEMO ?? '');
  for (const spec of OPTION_SPECS) if (out[spec.env] === undefined && spec.default !== undefined) out[spec.env] = spec.default;
  if (demo && raw.CHATGATE_MODEL === undefined) out.CHATGATE_MODEL = DEMO_MODEL;
  return out;
}

function describeIssues(issues: readonly z.core.$ZodIssue[], raw: RawEnv): string[] {
  const seen = new Set<string>();
  const messages: string[] = [];
  for (const issue of issues) {
    const env = String(issue.path[0]);
    if (seen.has(env)) continue;
    seen.add(env);
    const spec = OPTION_SPECS.find((s) => s.env === env) as OptionSpec;
    messages.push(mustBe(env, spec.rule, spec.secret ? undefined : raw[env] ?? spec.default));
  }
  return messages;
}

function mustBe(env: string, rule: string, got: string | undefined): string {
  return `\`${env}\` must be ${rule}${got === undefined ? '' : ` (got ${got})`}`;
}

function buildConfig(v: Record<string, unknown>, mcp: McpConfig, fileIssues: string[]): Config {
  const s = (key: string) => v[key] as string;
  const n = (key: string) => v[key] as number;
  const model = s('CHATGATE_MODEL');
  const known = lookupModel(model);
  const prices = readPricesFile(v.CHATGATE_PRICES as string | undefined, fileIssues);
  const host = s('CHATGATE_HTTP_HOST');
  return {
    redis: { url: v.REDIS_URL as string | undefined, clusterNodes: v.REDIS_CLUSTER_NODES as Config['redis']['clusterNodes'], fallbackHost: s('CHATGATE_REDIS_FALLBACK_HOST'), fallbackPort: n('CHATGATE_REDIS_FALLBACK_PORT'), keyPrefix: s('CHATGATE_KEY_PREFIX'), queuePrefix: s('CHATGATE_QUEUE_PREFIX'), queueShards: n('CHATGATE_QUEUE_SHARDS') },
    llm: {
      baseUrl: s('OPENAI_BASE_URL'),
      apiKey: v.OPENAI_API_KEY as string | undefined,
      model,
      summaryModel: (v.CHATGATE_SUMMARY_MODEL as string | undefined) ?? model,
      contextWindow: (v.CHATGATE_CONTEXT_WINDOW as number | undefined) ?? known?.contextWindow ?? 0,
      contextWindowSource: v.CHATGATE_CONTEXT_WINDOW === undefined ? 'table' : 'config',
      pricing: pricingOf(model, prices),
      prices,
      maxModelCalls: n('CHATGATE_MAX_MODEL_CALLS'),
      timeoutMs: n('CHATGATE_MODEL_TIMEOUT_MS'),
    },
    liveReplies: { enabled: v.CHATGATE_LIVE_REPLIES as boolean, editIntervalMs: n('CHATGATE_LIVE_REPLY_EDIT_INTERVAL_MS') },
    compaction: { reservedOutputTokens: n('CHATGATE_RESERVED_OUTPUT_TOKENS'), threshold: n('CHATGATE_THRESHOLD'), hygieneThreshold: n('CHATGATE_HYGIENE_THRESHOLD'), notice: v.CHATGATE_COMPACTION_NOTICE as boolean, idleSeconds: n('CHATGATE_IDLE_COMPACT_SECONDS') },
    busyMode: v.CHATGATE_BUSY_MODE as BusyModeDefaults,
    workers: { concurrency: n('CHATGATE_WORKER_CONCURRENCY'), shards: v.CHATGATE_WORKER_SHARDS as number[] | undefined, leaseTtlMs: n('CHATGATE_LEASE_TTL_MS'), turnLockMs: n('CHATGATE_TURN_LOCK_MS') },
    telegram: v.TELEGRAM_BOT_TOKEN === undefined ? undefined : { token: s('TELEGRAM_BOT_TOKEN'), apiRoot: s('TELEGRAM_API_ROOT'), webhookUrl: v.TELEGRAM_WEBHOOK_URL as string | undefined, webhookSecret: v.TELEGRAM_WEBHOOK_SECRET as string | undefined },
    groupMode: s('TELEGRAM_GROUP_MODE') as Config['groupMode'],
    groupTrigger: s('CHATGATE_GROUP_TRIGGER') as Config['groupTrigger'],
    discord: v.DISCORD_BOT_TOKEN === undefined ? undefined : { token: s('DISCORD_BOT_TOKEN'), apiRoot: s('DISCORD_API_ROOT') },
    access: {
      allow: { telegram: v.CHATGATE_ALLOW_TELEGRAM as AllowList, discord: v.CHATGATE_ALLOW_DISCORD as AllowList, web: v.CHATGATE_ALLOW_WEB as AllowList, api: v.CHATGATE_ALLOW_API as AllowList },
      ...(v.CHATGATE_API_KEYS === undefined ? {} : { apiKeys: v.CHATGATE_API_KEYS as ApiKeyEntry[] }),
      rateLimitPerMinute: n('CHATGATE_RATE_LIMIT_PER_MINUTE'),
      maxMessageChars: n('CHATGATE_MAX_MESSAGE_CHARS'),
    },
    approvals: { rules: (v.CHATGATE_TOOL_APPROVAL as ApprovalRule[] | undefined) ?? [], timeoutSeconds: n('CHATGATE_APPROVAL_TIMEOUT_SECONDS'), admins: (v.CHATGATE_APPROVAL_ADMINS as string[] | undefined) ?? [] },
    attachments: { maxBytes: n('CHATGATE_MAX_ATTACHMENT_BYTES'), ttlSeconds: n('CHATGATE_ATTACHMENT_TTL_SECONDS'), vision: v.CHATGATE_VISION as boolean | undefined, transcribeModel: v.CHATGATE_TRANSCRIBE_MODEL as string | undefined },
    http: {
      host, port: n('CHATGATE_HTTP_PORT'), workerPort: v.CHATGATE_WORKER_HTTP_PORT as number | undefined, monitorToken: v.CHATGATE_MONITOR_TOKEN as string | undefined, loopback: isLoopbackHost(host),
      timeouts: { headersTimeoutMs: n('CHATGATE_HTTP_HEADERS_TIMEOUT_MS'), requestTimeoutMs: n('CHATGATE_HTTP_REQUEST_TIMEOUT_MS'), keepAliveTimeoutMs: n('CHATGATE_HTTP_KEEP_ALIVE_TIMEOUT_MS') },
    },
    stateDir: s('CHATGATE_STATE_DIR'),
    logLevel: s('CHATGATE_LOG_LEVEL') as Config['logLevel'],
    logFormat: s('CHATGATE_LOG_FORMAT') as Config['logFormat'],
    budgets: buildBudgets(v, fileIssues),
    heartbeatTtlMs: n('CHATGATE_HEARTBEAT_TTL_MS'),
    transcriptMaxLen: n('CHATGATE_TRANSCRIPT_MAXLEN'),
    usageRetention: { hourlyDays: n('CHATGATE_USAGE_HOURLY_DAYS'), dailyDays: n('CHATGATE_USAGE_DAILY_DAYS') },
    seenTtlSeconds: n('CHATGATE_SEEN_TTL_SECONDS'),
    channelStartTimeoutMs: n('CHATGATE_CHANNEL_START_TIMEOUT_MS'),
    channelLeaseMs: n('CHATGATE_CHANNEL_LEASE_MS'),
    demo: v.CHATGATE_DEMO as boolean,
    demoWordDelayMs: n('CHATGATE_DEMO_WORD_DELAY_MS'),
    configFile: v.CHATGATE_CONFIG as string | undefined,
    mcp,
  };
}

function crossChecks(c: Config, raw: RawEnv): string[] {
  const issues: string[] = [];
  if (c.redis.url && c.redis.clusterNodes) issues.push('`REDIS_URL` and `REDIS_CLUSTER_NODES` must not both be set (one Redis, or a Cluster)');
  // Redis Cluster hashes only the first non-empty `{…}` of a key: BullMQ's multi-key scripts need every queue key in one slot.
  if (c.redis.clusterNodes && !/^[^{]*\{[^}]+\}/.test(c.redis.queuePrefix)) {
    issues.push(mustBe('CHATGATE_QUEUE_PREFIX', 'hash-tagged (e.g. `{cgq}`) on a Redis Cluster', c.redis.queuePrefix));
  }
  const missing = (c.workers.shards ?? []).filter((shard) => shard >= c.redis.queueShards);
  if (missing.length > 0) issues.push(mustBe('CHATGATE_WORKER_SHARDS', `shard numbers below CHATGATE_QUEUE_SHARDS (${c.redis.queueShards})`, missing.join(',')));
  if (c.llm.contextWindow === 0) {
    issues.push(`\`CHATGATE_CONTEXT_WINDOW\` must be set for a model not in the table of known models (got model ${c.llm.model})`);
  } else if (c.compaction.reservedOutputTokens > c.llm.contextWindow / 2) {
    issues.push(mustBe('CHATGATE_RESERVED_OUTPUT_TOKENS', `at most half the context window (${Math.floor(c.llm.contextWindow / 2)})`, String(c.compaction.reservedOutputTokens)));
  }
  if (c.compaction.hygieneThreshold <= c.compaction.threshold) {
    issues.push(mustBe('CHATGATE_HYGIENE_THRESHOLD', `greater than CHATGATE_THRESHOLD (${c.compaction.threshold})`, raw.CHATGATE_HYGIENE_THRESHOLD ?? String(c.compaction.hygieneThreshold)));
  }
  if (c.http.timeouts.headersTimeoutMs > c.http.timeouts.requestTimeoutMs) {
    issues.push(mustBe('CHATGATE_HTTP_HEADERS_TIMEOUT_MS', `at most CHATGATE_HTTP_REQUEST_TIMEOUT_MS (${c.http.timeouts.requestTimeoutMs})`, String(c.http.timeouts.headersTimeoutMs)));
  }
  if (!c.http.loopback && !c.http.monitorToken) {
    issues.push(`\`CHATGATE_MONITOR_TOKEN\` must be set when \`CHATGATE_HTTP_HOST\` is not loopback (got host ${c.http.host})`);
  }
  if (c.telegram?.webhookUrl && !c.telegram.webhookSecret) {
    issues.push('`TELEGRAM_WEBHOOK_SECRET` must be set when `TELEGRAM_WEBHOOK_URL` is set');
  }
  if (!c.telegram && (raw.TELEGRAM_WEBHOOK_URL || raw.TELEGRAM_WEBHOOK_SECRET)) {
    issues.push('`TELEGRAM_BOT_TOKEN` must be set when a Telegram webhook is configured');
  }
  return issues;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}
