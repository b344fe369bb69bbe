import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeConfig, isLoopbackHost, loadConfig, renderConfigTable, renderEnvExample } from '../../src/config.js';
import { estimateCostUsd, KNOWN_MODELS, lookupModel } from '../../src/core/models.js';
import { misspeltOptionWarnings } from '../../src/config-options.js';
import { DEFAULT_DISCORD_API_ROOT, DEFAULT_TELEGRAM_API_ROOT } from '../../src/core/inbound.js';
import { ConfigError } from '../../src/errors.js';
import { DEFAULT_HEARTBEAT_TTL_MS } from '../../src/redis/heartbeats.js';
import { DEFAULT_SEEN_TTL_SECONDS } from '../../src/redis/ingest.js';
import { DEFAULT_TRANSCRIPT_RETENTION } from '../../src/redis/session-store.js';

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

const BAD_VALUES: [env: string, value: string, message: string][] = [
  ['REDIS_URL', 'http://localhost:6379', '`REDIS_URL` must be a redis:// or rediss:// URL (got http://localhost:6379)'],
  ['REDIS_URL', 'not a url', '`REDIS_URL` must be a redis:// or rediss:// URL (got not a url)'],
  ['CHATGATE_REDIS_FALLBACK_PORT', '70000', '`CHATGATE_REDIS_FALLBACK_PORT` must be an integer in [1, 65535] (got 70000)'],
  ['CHATGATE_REDIS_FALLBACK_PORT', '0', '`CHATGATE_REDIS_FALLBACK_PORT` must be an integer in [1, 65535] (got 0)'],
  ['CHATGATE_KEY_PREFIX', 'cg', '`CHATGATE_KEY_PREFIX` must be letters, digits, `_.-{}:` ending in `:` (got cg)'],
  ['CHATGATE_QUEUE_PREFIX', 'cg:q', '`CHATGATE_QUEUE_PREFIX` must be letters, digits and `_.-{}` (no `:`) (got cg:q)'],
  ['OPENAI_BASE_URL', 'ftp://example.com', '`OPENAI_BASE_URL` must be an http(s) URL (got ftp://example.com)'],
  ['CHATGATE_MODEL', 'gpt 4o', '`CHATGATE_MODEL` must be a model name (got gpt 4o)'],
  ['CHATGATE_SUMMARY_MODEL', 'a b', '`CHATGATE_SUMMARY_MODEL` must be a model name (got a b)'],
  ['CHATGATE_CONTEXT_WINDOW', '512', '`CHATGATE_CONTEXT_WINDOW` must be an integer in [1024, 10000000] (got 512)'],
  ['CHATGATE_CONTEXT_WINDOW', '128k', '`CHATGATE_CONTEXT_WINDOW` must be an integer in [1024, 10000000] (got 128k)'],
  ['CHATGATE_RESERVED_OUTPUT_TOKENS', '-1', '`CHATGATE_RESERVED_OUTPUT_TOKENS` must be an integer ≥ 0 (got -1)'],
  ['CHATGATE_RESERVED_OUTPUT_TOKENS', '100000', '`CHATGATE_RESERVED_OUTPUT_TOKENS` must be at most half the context window (64000) (got 100000)'],
  ['CHATGATE_THRESHOLD', '1.5', '`CHATGATE_THRESHOLD` must be a number in (0, 1) (got 1.5)'],
  ['CHATGATE_THRESHOLD', '0', '`CHATGATE_THRESHOLD` must be a number in (0, 1) (got 0)'],
  ['CHATGATE_THRESHOLD', 'half', '`CHATGATE_THRESHOLD` must be a number in (0, 1) (got half)'],
  ['CHATGATE_HYGIENE_THRESHOLD', '1', '`CHATGATE_HYGIENE_THRESHOLD` must be a number in (0, 1) (got 1)'],
  ['CHATGATE_HYGIENE_THRESHOLD', '0.4', '`CHATGATE_HYGIENE_THRESHOLD` must be greater than CHATGATE_THRESHOLD (0.5) (got 0.4)'],
  ['CHATGATE_HTTP_HEADERS_TIMEOUT_MS', '70000', '`CHATGATE_HTTP_HEADERS_TIMEOUT_MS` must be at most CHATGATE_HTTP_REQUEST_TIMEOUT_MS (60000) (got 70000)'],
  ['CHATGATE_MAX_MODEL_CALLS', '0', '`CHATGATE_MAX_MODEL_CALLS` must be an integer in [1, 100] (got 0)'],
  ['CHATGATE_MAX_MODEL_CALLS', '2.5', '`CHATGATE_MAX_MODEL_CALLS` must be an integer in [1, 100] (got 2.5)'],
  ['CHATGATE_WORKER_CONCURRENCY', '1000', '`CHATGATE_WORKER_CONCURRENCY` must be an integer in [1, 256] (got 1000)'],
  ['TELEGRAM_BOT_TOKEN', 'not-a-token', '`TELEGRAM_BOT_TOKEN` must be a bot token like `123456:ABC-DEF…` from @BotFather'],
  ['TELEGRAM_GROUP_MODE', 'per-thread', '`TELEGRAM_GROUP_MODE` must be `per-chat` or `per-user` (got per-thread)'],
  ['DISCORD_BOT_TOKEN', 'short', '`DISCORD_BOT_TOKEN` must be a Discord bot token'],
  ['CHATGATE_ALLOW_TELEGRAM', '12, 3 4', '`CHATGATE_ALLOW_TELEGRAM` must be `*`, `none` or a comma-separated list of user ids (got 12, 3 4)'],
  ['CHATGATE_ALLOW_DISCORD', ',', '`CHATGATE_ALLOW_DISCORD` must be `*`, `none` or a comma-separated list of user ids (got ,)'],
  ['CHATGATE_ALLOW_WEB', 'a;b', '`CHATGATE_ALLOW_WEB` must be `*`, `none` or a comma-separated list of user ids (got a;b)'],
  ['CHATGATE_API_KEYS', 'short=alice', '`CHATGATE_API_KEYS` must be a comma-separated list of `<key>=<user>` (e.g. `sk-alice-0123456789abcdef=alice`): each key 16–256 characters of `A-Za-z0-9_.~+/-` and given once, each user 1–64 characters of `A-Za-z0-9_.@-`'],
  ['CHATGATE_API_KEYS', 'sk-alice-0123456789abcdef', '`CHATGATE_API_KEYS` must be a comma-separated list of `<key>=<user>` (e.g. `sk-alice-0123456789abcdef=alice`): each key 16–256 characters of `A-Za-z0-9_.~+/-` and given once, each user 1–64 characters of `A-Za-z0-9_.@-`'],
  ['CHATGATE_API_KEYS', 'sk-alice-0123456789abcdef=alice,sk-alice-0123456789abcdef=bob', '`CHATGATE_API_KEYS` must be a comma-separated list of `<key>=<user>` (e.g. `sk-alice-0123456789abcdef=alice`): each key 16–256 characters of `A-Za-z0-9_.~+/-` and given once, each user 1–64 characters of `A-Za-z0-9_.@-`'],
  ['CHATGATE_API_KEYS', 'sk-alice-0123456789abcdef=al ice', '`CHATGATE_API_KEYS` must be a comma-separated list of `<key>=<user>` (e.g. `sk-alice-0123456789abcdef=alice`): each key 16–256 characters of `A-Za-z0-9_.~+/-` and given once, each user 1–64 characters of `A-Za-z0-9_.@-`'],
  ['CHATGATE_RATE_LIMIT_PER_MINUTE', '-1', '`CHATGATE_RATE_LIMIT_PER_MINUTE` must be an integer in [0, 10000] (got -1)'],
  ['CHATGATE_MAX_MESSAGE_CHARS', 'lots', '`CHATGATE_MAX_MESSAGE_CHARS` must be an integer in [1, 1000000] (got lots)'],
  ['CHATGATE_HTTP_PORT', '65536', '`CHATGATE_HTTP_PORT` must be an integer in [0, 65535] (got 65536)'],
  ['CHATGATE_CHANNEL_LEASE_MS', '1000', '`CHATGATE_CHANNEL_LEASE_MS` must be an integer in [3000, 600000] (got 1000)'],
  ['CHATGATE_HTTP_HOST', '0.0.0.0', '`CHATGATE_MONITOR_TOKEN` must be set when `CHATGATE_HTTP_HOST` is not loopback (got host 0.0.0.0)'],
  ['CHATGATE_MONITOR_TOKEN', 'short', '`CHATGATE_MONITOR_TOKEN` must be at least 16 characters without spaces'],
  ['CHATGATE_LOG_LEVEL', 'verbose', '`CHATGATE_LOG_LEVEL` must be one of fatal, error, warn, info, debug, trace, silent (got verbose)'],
  ['CHATGATE_LOG_FORMAT', 'colour', '`CHATGATE_LOG_FORMAT` must be one of auto, pretty, json (got colour)'],
  ['CHATGATE_HEARTBEAT_TTL_MS', '500', '`CHATGATE_HEARTBEAT_TTL_MS` must be an integer in [1000, 600000] (got 500)'],
  ['DISCORD_API_ROOT', 'discord.com/api', '`DISCORD_API_ROOT` must be an http(s) URL (got discord.com/api)'],
  ['CHATGATE_TRANSCRIPT_MAXLEN', '-5', '`CHATGATE_TRANSCRIPT_MAXLEN` must be an integer ≥ 0 (got -5)'],
  ['CHATGATE_SEEN_TTL_SECONDS', '60', '`CHATGATE_SEEN_TTL_SECONDS` must be an integer in [300, 2592000] (got 60)'],
  ['CHATGATE_DEMO', 'maybe', '`CHATGATE_DEMO` must be true or false (got maybe)'],
  ['TELEGRAM_WEBHOOK_URL', 'http://example.com/hook', '`TELEGRAM_WEBHOOK_URL` must be an https URL (got http://example.com/hook)'],
  ['TELEGRAM_WEBHOOK_SECRET', 'has spaces', '`TELEGRAM_WEBHOOK_SECRET` must be 1-256 characters of `A-Za-z0-9_-`'],
];

describe('loadConfig', () => {
  it.each(BAD_VALUES)('rejects %s=%s naming the option and the rule', (env, value, message) => {
    const error = configError({ [env]: value });
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.issues).toEqual([message]);
    expect(error.message).toContain(message);
  });

  it('reports one message per bad option, all at once', () => {
    const error = configError({ CHATGATE_THRESHOLD: '2', CHATGATE_HTTP_PORT: 'x', CHATGATE_LOG_LEVEL: 'loud' });
    expect(error.issues).toHaveLength(3);
    expect(error.issues.map((issue) => issue.match(/^`(\w+)`/)?.[1])).toEqual(['CHATGATE_THRESHOLD', 'CHATGATE_HTTP_PORT', 'CHATGATE_LOG_LEVEL']);
  });

  it('never echoes a secret value', () => {
    const error = configError({ TELEGRAM_BOT_TOKEN: 'sekrit-value', CHATGATE_MONITOR_TOKEN: 'sekrit 2', OPENAI_API_KEY: 'sk-fine' , DISCORD_BOT_TOKEN: 'sekrit3', CHATGATE_API_KEYS: 'sekrit-key-0123456789=alice,sekrit-key-0123456789=bob' });
    expect(error.message).not.toMatch(/sekrit/);
  });

  it('requires CHATGATE_CONTEXT_WINDOW for a model not in the table', () => {
    expect(configError({ CHATGATE_MODEL: 'my-local-model' }).issues).toEqual([
      '`CHATGATE_CONTEXT_WINDOW` must be set for a model not in the table of known models (got model my-local-model)',
    ]);
    const config = loadConfig({ CHATGATE_MODEL: 'my-local-model', CHATGATE_CONTEXT_WINDOW: '32000' });
    expect(config.llm).toMatchObject({ contextWindow: 32_000, contextWindowSource: 'config', pricing: undefined });
  });

  it('requires a webhook secret with a webhook URL, and a bot token with either', () => {
    expect(configError({ TELEGRAM_BOT_TOKEN: '123:abc', TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/tg' }).issues).toEqual([
      '`TELEGRAM_WEBHOOK_SECRET` must be set when `TELEGRAM_WEBHOOK_URL` is set',
    ]);
    expect(configError({ TELEGRAM_WEBHOOK_SECRET: 'abc' }).issues).toEqual(['`TELEGRAM_BOT_TOKEN` must be set when a Telegram webhook is configured']);
  });

  it('applies the documented defaults to an empty environment', () => {
    const config = loadConfig({});
    expect(config).toEqual({
      redis: { url: undefined, fallbackHost: '127.0.0.1', fallbackPort: 6379, keyPrefix: 'cg:', queuePrefix: '{cgq}', queueShards: 1 },
      llm: {
        baseUrl: 'https://api.openai.com/v1', apiKey: undefined, model: 'gpt-4o-mini', summaryModel: 'gpt-4o-mini',
        contextWindow: 128_000, contextWindowSource: 'table', pricing: { input: 0.15, output: 0.6, cachedInput: 0.075 }, prices: {}, maxModelCalls: 12, timeoutMs: 120_000,
      },
      liveReplies: { enabled: true, editIntervalMs: 1000 },
      compaction: { reservedOutputTokens: 4096, threshold: 0.5, hygieneThreshold: 0.85, notice: true, idleSeconds: 60 },
      busyMode: { mode: 'steer' },
      workers: { concurrency: 32, leaseTtlMs: 15000, turnLockMs: 30000 },
      telegram: undefined,
      groupMode: 'per-chat',
      groupTrigger: 'mention',
      discord: undefined,
      access: { allow: { telegram: '*', discord: '*', web: '*', api: '*' }, rateLimitPerMinute: 20, maxMessageChars: 8000 },
      approvals: { rules: [], timeoutSeconds: 600, admins: [] },
      attachments: { maxBytes: 10 * 1024 * 1024, ttlSeconds: 86_400, vision: undefined, transcribeModel: undefined },
      http: { host: '127.0.0.1', port: 8787, monitorToken: undefined, loopback: true, timeouts: { headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 5_000 } },
      stateDir: '.state',
      logLevel: 'info',
      logFormat: 'auto',
      budgets: { user: {}, chat: {}, deployment: {}, turn: {}, timeZone: 'UTC', noticePercent: 80, users: {} },
      heartbeatTtlMs: 15_000,
      transcriptMaxLen: 10_000, usageRetention: { hourlyDays: 14, dailyDays: 400 },
      seenTtlSeconds: 86_400,
      channelStartTimeoutMs: 30_000,
      channelLeaseMs: 10_000,
      demo: false,
      demoWordDelayMs: 25,
      configFile: undefined,
      mcp: { servers: [] },
    });
  });

  it('takes each default from the component that owns it (written once)', () => {
    const config = loadConfig({ TELEGRAM_BOT_TOKEN: '123456:ABC-DEF', DISCORD_BOT_TOKEN: 'x'.repeat(30) });
    expect(config.telegram?.apiRoot).toBe(DEFAULT_TELEGRAM_API_ROOT);
    expect(config.discord?.apiRoot).toBe(DEFAULT_DISCORD_API_ROOT);
    expect(config.heartbeatTtlMs).toBe(DEFAULT_HEARTBEAT_TTL_MS);
    expect(config.seenTtlSeconds).toBe(DEFAULT_SEEN_TTL_SECONDS);
    // The session store's own default (a store built without the option) is the configuration's.
    expect(config.transcriptMaxLen).toBe(DEFAULT_TRANSCRIPT_RETENTION);
  });

  it('returns a deeply frozen object', () => {
    const config = loadConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.llm)).toBe(true);
    expect(Object.isFrozen(config.access.allow)).toBe(true);
  });

  it('parses every option when set', () => {
    const config = loadConfig({
      REDIS_URL: 'rediss://:pw@redis.internal:6380/2', CHATGATE_KEY_PREFIX: '{cg}:', CHATGATE_QUEUE_PREFIX: '{cgq}',
      OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1', OPENAI_API_KEY: 'ollama', CHATGATE_MODEL: 'ollama/llama3.1:8b', CHATGATE_SUMMARY_MODEL: 'qwen2.5:3b',
      CHATGATE_RESERVED_OUTPUT_TOKENS: '2048', CHATGATE_THRESHOLD: '.6', CHATGATE_HYGIENE_THRESHOLD: '0.9', CHATGATE_COMPACTION_NOTICE: 'false', CHATGATE_IDLE_COMPACT_SECONDS: '0', CHATGATE_BUSY_MODE: 'queue, discord=steer', CHATGATE_MAX_MODEL_CALLS: '5', CHATGATE_MODEL_TIMEOUT_MS: '15000',
      CHATGATE_WORKER_CONCURRENCY: '8', TELEGRAM_BOT_TOKEN: '123456:ABC-def_ghi', TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/tg',
      TELEGRAM_WEBHOOK_SECRET: 's3cr3t_-', TELEGRAM_GROUP_MODE: 'per-user', DISCORD_BOT_TOKEN: 'MTA.abcdefghijklmnopqrstuvwxyz',
      CHATGATE_ALLOW_TELEGRAM: '12, 34', CHATGATE_ALLOW_DISCORD: 'none', CHATGATE_ALLOW_WEB: '*', CHATGATE_ALLOW_API: 'alice', CHATGATE_RATE_LIMIT_PER_MINUTE: '60',
      CHATGATE_API_KEYS: 'sk-a-0123456789abcdef=alice, sk-b-0123456789abcdef=alice,sk-c/0123456789abcdef=bob@example.com',
      CHATGATE_MAX_MESSAGE_CHARS: '4000', CHATGATE_HTTP_HOST: '0.0.0.0', CHATGATE_HTTP_PORT: '0', CHATGATE_MONITOR_TOKEN: 'a-long-monitor-token-123',
      CHATGATE_STATE_DIR: '/var/lib/chatgate', CHATGATE_LOG_LEVEL: 'debug', CHATGATE_TRANSCRIPT_MAXLEN: '5000', CHATGATE_DEMO: 'no',
      DISCORD_API_ROOT: 'http://127.0.0.1:9000/api', CHATGATE_LOG_FORMAT: 'json', CHATGATE_HEARTBEAT_TTL_MS: '3000',
      CHATGATE_HTTP_HEADERS_TIMEOUT_MS: '5000', CHATGATE_HTTP_REQUEST_TIMEOUT_MS: '120000', CHATGATE_HTTP_KEEP_ALIVE_TIMEOUT_MS: '2000',
    });
    expect(config.redis).toMatchObject({ url: 'rediss://:pw@redis.internal:6380/2', keyPrefix: '{cg}:', queuePrefix: '{cgq}' });
    expect(config.llm).toMatchObject({ model: 'ollama/llama3.1:8b', summaryModel: 'qwen2.5:3b', contextWindow: 131_072, pricing: undefined, maxModelCalls: 5, timeoutMs: 15_000 });
    expect(config.compaction).toEqual({ reservedOutputTokens: 2048, threshold: 0.6, hygieneThreshold: 0.9, notice: false, idleSeconds: 0 });
    expect(config.busyMode).toEqual({ mode: 'queue', channels: { discord: 'steer' } });
    expect(config.telegram).toEqual({ token: '123456:ABC-def_ghi', apiRoot: 'https://api.telegram.org', webhookUrl: 'https://bot.example.com/tg', webhookSecret: 's3cr3t_-' });
    expect(config.discord).toEqual({ token: 'MTA.abcdefghijklmnopqrstuvwxyz', apiRoot: 'http://127.0.0.1:9000/api' });
    expect(config.groupMode).toBe('per-user');
    expect(config.access).toEqual({
      allow: { telegram: ['12', '34'], discord: [], web: '*', api: ['alice'] }, rateLimitPerMinute: 60, maxMessageChars: 4000,
      apiKeys: [{ key: 'sk-a-0123456789abcdef', user: 'alice' }, { key: 'sk-b-0123456789abcdef', user: 'alice' }, { key: 'sk-c/0123456789abcdef', user: 'bob@example.com' }],
    });
    expect(config.http).toEqual({ host: '0.0.0.0', port: 0, monitorToken: 'a-long-monitor-token-123', loopback: false, timeouts: { headersTimeoutMs: 5000, requestTimeoutMs: 120_000, keepAliveTimeoutMs: 2000 } });
    expect(config).toMatchObject({ stateDir: '/var/lib/chatgate', logLevel: 'debug', logFormat: 'json', heartbeatTtlMs: 3000, transcriptMaxLen: 5000, demo: false });
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ CHATGATE_THRESHOLD: '', REDIS_URL: '  ', OPENAI_API_KEY: '' })).toMatchObject({
      compaction: { threshold: 0.5 }, redis: { url: undefined }, llm: { apiKey: undefined },
    });
  });

  it('selects the offline demo model with CHATGATE_DEMO', () => {
    const config = loadConfig({ CHATGATE_DEMO: 'true' });
    expect(config.demo).toBe(true);
    expect(config.llm).toMatchObject({ model: 'chatgate-demo', contextWindow: 8192 });
  });

  it('reads a JSON config file named by CHATGATE_CONFIG; the environment wins over it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cg-config-'));
    const file = join(dir, 'chatgate.json');
    writeFileSync(file, JSON.stringify({ CHATGATE_THRESHOLD: 0.4, CHATGATE_WORKER_CONCURRENCY: 2, CHATGATE_DEMO: true }));
    const config = loadConfig({ CHATGATE_CONFIG: file, CHATGATE_WORKER_CONCURRENCY: '6' });
    expect(config).toMatchObject({ compaction: { threshold: 0.4 }, workers: { concurrency: 6 }, demo: true, configFile: file });
    writeFileSync(file, JSON.stringify({ CHATGATE_THRESHOLD: 3, NOT_AN_OPTION: 1 }));
    expect(configError({ CHATGATE_CONFIG: file }).issues).toEqual([`\`NOT_AN_OPTION\` in ${file} is not a chatgate option`]);
    writeFileSync(file, JSON.stringify({ CHATGATE_THRESHOLD: 3 }));
    expect(configError({ CHATGATE_CONFIG: file }).issues).toEqual(['`CHATGATE_THRESHOLD` must be a number in (0, 1) (got 3)']);
    expect(configError({ CHATGATE_CONFIG: join(dir, 'missing.json') }).issues[0]).toMatch(/^`CHATGATE_CONFIG` must name a readable JSON file/);
  });
});

describe('describeConfig', () => {
  it('documents every option with its rule and meaning, and .env.example is generated from it', () => {
    const options = describeConfig();
    expect(options.length).toBeGreaterThanOrEqual(33);
    for (const option of options) {
      expect(option.doc.length, option.env).toBeGreaterThan(10);
      expect(option.rule.length, option.env).toBeGreaterThan(3);
    }
    const example = readFileSync(new URL('../../.env.example', import.meta.url), 'utf8');
    expect(example).toBe(renderEnvExample());
    for (const option of options) expect(renderConfigTable()).toContain(`| \`${option.env}\` |`);
  });
});

describe('misspeltOptionWarnings', () => {
  it('names a variable of an option\'s family close to an option, and leaves every other variable alone', () => {
    expect(misspeltOptionWarnings({
      CHATGATE_MODLE: 'gpt-4o', OPENAI_API_KY: 'sk', REDIS_URI: 'redis://x', CHATGATE_API_KEY: 'k',
      CHATGATE_MODEL: 'gpt-4o', CHATGATE_MODULE_LOG: '1', OPENAI_ORG_ID: 'org', PATH: '/bin', HOME: '/root',
    })).toEqual([
      '`CHATGATE_MODLE` is not a chatgate option (did you mean `CHATGATE_MODEL`?)',
      '`OPENAI_API_KY` is not a chatgate option (did you mean `OPENAI_API_KEY`?)',
      '`REDIS_URI` is not a chatgate option (did you mean `REDIS_URL`?)',
      '`CHATGATE_API_KEY` is not a chatgate option (did you mean `CHATGATE_API_KEYS`?)',
    ]);
  });
});

describe('isLoopbackHost', () => {
  it.each([['127.0.0.1', true], ['127.1.2.3', true], ['localhost', true], ['::1', true], ['[::1]', true], ['0.0.0.0', false], ['::', false], ['10.0.0.5', false], ['example.com', false]])(
    '%s → %s', (host, loopback) => expect(isLoopbackHost(host)).toBe(loopback),
  );
});

describe('model table', () => {
  it.each([
    ['gpt-4o', 128_000], ['gpt-4o-mini', 128_000], ['gpt-4o-2024-08-06', 128_000], ['gpt-4.1', 1_047_576], ['gpt-4.1-mini', 1_047_576],
    ['gpt-5', 400_000], ['gpt-5-mini', 400_000], ['o3', 200_000], ['o4-mini', 200_000], ['gpt-3.5-turbo', 16_385], ['gpt-4', 8_192],
    ['openai/gpt-4o', 128_000], ['llama3.1:8b', 131_072], ['qwen2.5:7b-instruct', 32_768], ['mistral', 32_768], ['GPT-4O', 128_000],
  ])('knows the window of %s', (model, window) => {
    expect(lookupModel(model)?.contextWindow).toBe(window);
  });

  it('does not know made-up models', () => {
    expect(lookupModel('my-local-model')).toBeUndefined();
    expect(lookupModel('gpt-4-foo')).toBeUndefined();
  });

  it('prices cached prompt tokens at the cached rate', () => {
    const pricing = lookupModel('gpt-4o')?.pricing;
    expect(estimateCostUsd(pricing, { promptTokens: 1_000_000, completionTokens: 0 })).toBeCloseTo(2.5);
    expect(estimateCostUsd(pricing, { promptTokens: 1_000_000, completionTokens: 1_000_000, cachedTokens: 1_000_000 })).toBeCloseTo(11.25);
    expect(estimateCostUsd(undefined, { promptTokens: 5, completionTokens: 5 })).toBe(0);
  });

  it('lists every entry with a positive window', () => {
    for (const entry of KNOWN_MODELS) expect(entry.contextWindow).toBeGreaterThan(1000);
  });
});
