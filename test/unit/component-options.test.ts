import { describe, expect, it } from 'vitest';
import { gatewayOptions, workerOptions } from '../../src/cli/compose.js';
import { DEFAULT_MODEL_TIMEOUT_MS } from '../../src/llm/client.js';
import { loadConfig } from '../../src/config.js';
import { numberIssues, parseRuled, TOKEN_LIMIT, USD_LIMIT } from '../../src/core/option-checks.js';
import { GATEWAY_DEFAULTS, gatewayOptionIssues } from '../../src/gateway/gateway-options.js';
import { ConfigError } from '../../src/errors.js';
import { startGateway } from '../../src/gateway/index.js';
import { createSilentLogger } from '../../src/log.js';
import { MemorySessionView } from '../../src/monitor/index.js';
import { runWorker } from '../../workers/main.js';
import { WORKER_DEFAULTS, workerOptionIssues } from '../../workers/worker-options.js';

const llm = { baseURL: 'http://127.0.0.1:1/v1', model: 'gpt-4o-mini' };

describe('numberIssues', () => {
  it.each([
    [{ integer: true, min: 1 }, 0, '`n` must be an integer ≥ 1 (got 0)'],
    [{ integer: true, min: 1 }, 1.5, '`n` must be an integer ≥ 1 (got 1.5)'],
    [{ above: 0, below: 1 }, 1.5, '`n` must be a number in (0, 1) (got 1.5)'],
    [{ integer: true, min: 0, max: 65535 }, 70_000, '`n` must be an integer in [0, 65535] (got 70000)'],
    [{ below: 1 }, Number.NaN, '`n` must be a number < 1 (got NaN)'],
    [{ min: 0 }, Number.POSITIVE_INFINITY, '`n` must be a number ≥ 0 (got Infinity)'],
    [{ min: 0 }, '', '`n` must be a number ≥ 0 (got "")'],
  ])('%j rejects %s', (rule, value, message) => {
    expect(numberIssues({ n: value }, { n: rule })).toEqual([message]);
  });

  it('accepts values inside their rules and skips undefined ones', () => {
    expect(numberIssues({ a: 1, b: 0.5, c: undefined }, { a: { integer: true, min: 1 }, b: { above: 0, below: 1 }, c: { min: 5 } })).toEqual([]);
  });

  it.each([
    [USD_LIMIT, '2.50', 2.5], [USD_LIMIT, ' .5 ', 0.5], [USD_LIMIT, '0', 0], [USD_LIMIT, '-1', undefined], [USD_LIMIT, 'lots', undefined], [USD_LIMIT, '', undefined], [USD_LIMIT, '9'.repeat(400), undefined],
    [TOKEN_LIMIT, '100000', 100_000], [TOKEN_LIMIT, '1.5', undefined], [TOKEN_LIMIT, '1e3', undefined], [TOKEN_LIMIT, 'none', undefined],
  ])('parseRuled(%j, %j) is %s (the rule of the environment and the CLI)', (rule, text, expected) => {
    expect(parseRuled(text, rule)).toBe(expected);
  });
});

describe('component options', () => {
  it('the configuration\'s defaults are the components\' own', () => {
    const config = loadConfig({});
    expect(workerOptions(config)).toMatchObject({
      concurrency: WORKER_DEFAULTS.concurrency, maxModelCalls: WORKER_DEFAULTS.maxModelCalls, leaseTtlMs: WORKER_DEFAULTS.leaseTtlMs,
      lockDurationMs: WORKER_DEFAULTS.lockDurationMs, threshold: WORKER_DEFAULTS.threshold, keyPrefix: WORKER_DEFAULTS.keyPrefix,
      llm: expect.objectContaining({ timeoutMs: DEFAULT_MODEL_TIMEOUT_MS }),
    });
    expect(gatewayOptions(config)).toMatchObject({
      hygieneThreshold: GATEWAY_DEFAULTS.hygieneThreshold, threshold: GATEWAY_DEFAULTS.threshold, sessionLeaseTtlMs: GATEWAY_DEFAULTS.sessionLeaseTtlMs,
      rateLimitPerMinute: GATEWAY_DEFAULTS.rateLimitPerMinute, maxMessageChars: GATEWAY_DEFAULTS.maxMessageChars, port: GATEWAY_DEFAULTS.port,
      host: GATEWAY_DEFAULTS.host, queuePrefix: GATEWAY_DEFAULTS.queuePrefix, groupMode: GATEWAY_DEFAULTS.groupMode,
    });
  });

  it('passes the busy mode to the gateway and the idle compaction delay to the worker', () => {
    const config = loadConfig({ CHATGATE_BUSY_MODE: 'queue', CHATGATE_IDLE_COMPACT_SECONDS: '90' });
    expect(gatewayOptions(config).busyMode).toEqual(config.busyMode);
    expect(JSON.stringify(config.busyMode)).toContain('queue');
    expect(workerOptions(config).idleCompactSeconds).toBe(90);
  });

  it('the worker names every option that breaks its rule', () => {
    expect(workerOptionIssues({ ...WORKER_DEFAULTS, llm, contextWindow: 8192, concurrency: 0, threshold: 1 })).toEqual([
      '`threshold` must be a number in (0, 1) (got 1)',
      '`concurrency` must be an integer ≥ 1 (got 0)',
    ]);
    expect(workerOptionIssues({ ...WORKER_DEFAULTS, llm, contextWindow: 8192, reservedOutputTokens: 8192 })).toEqual([
      '`reservedOutputTokens` must be less than `contextWindow` (8192) (got 8192)',
    ]);
  });

  it('the gateway refuses a hygiene trigger at or below the in-loop one', () => {
    expect(gatewayOptionIssues({ ...GATEWAY_DEFAULTS, llm, contextWindow: 8192, threshold: 0.6, hygieneThreshold: 0.5 })).toEqual([
      '`hygieneThreshold` must be greater than `threshold` (0.6) (got 0.5)',
    ]);
  });

  it('runWorker and startGateway refuse invalid options before they connect to anything', async () => {
    await expect(runWorker({ redis: 'redis://127.0.0.1:1' }, { llm, contextWindow: 8192, maxModelCalls: 0 })).rejects.toThrow(ConfigError);
    const deps = { redis: undefined as never, logger: createSilentLogger(), sessions: new MemorySessionView() };
    await expect(startGateway(deps, { llm, contextWindow: 8192, port: -1 })).rejects.toThrow('`port` must be an integer in [0, 65535] (got -1)');
  });
});
