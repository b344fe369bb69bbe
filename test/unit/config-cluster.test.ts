import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';

const issuesOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.issues];
    throw err;
  }
  return [];
};

describe('REDIS_CLUSTER_NODES', () => {
  it('is unset by default: one Redis', () => {
    expect(loadConfig({}).redis.clusterNodes).toBeUndefined();
  });

  it('parses comma-separated host:port seeds (names, IPv4, bracketed IPv6; spaces and a trailing comma tolerated)', () => {
    expect(loadConfig({ REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-b.internal:7001,[::1]:7002, ' }).redis.clusterNodes).toEqual([
      { host: '10.0.0.1', port: 7000 }, { host: 'redis-b.internal', port: 7001 }, { host: '::1', port: 7002 },
    ]);
  });

  it.each(['redis-a', '10.0.0.1:', ':7000', '10.0.0.1:70000', 'redis://10.0.0.1:7000', ',', 'a:1;b:2'])('rejects %s, naming the option and the rule', (value) => {
    expect(issuesOf({ REDIS_CLUSTER_NODES: value })).toEqual([`\`REDIS_CLUSTER_NODES\` must be a comma-separated list of \`host:port\` (e.g. \`10.0.0.1:7000,10.0.0.2:7000\`) (got ${value})`]);
  });

  it('cannot be set together with REDIS_URL', () => {
    expect(issuesOf({ REDIS_CLUSTER_NODES: '10.0.0.1:7000', REDIS_URL: 'redis://10.0.0.9:6379' })).toEqual(['`REDIS_URL` and `REDIS_CLUSTER_NODES` must not both be set (one Redis, or a Cluster)']);
  });

  it.each(['cgq', 'cg{}q', 'cg}q{x'])('needs a hash-tagged queue prefix on a cluster (not %s)', (prefix) => {
    expect(issuesOf({ REDIS_CLUSTER_NODES: '10.0.0.1:7000', CHATGATE_QUEUE_PREFIX: prefix })).toEqual([`\`CHATGATE_QUEUE_PREFIX\` must be hash-tagged (e.g. \`{cgq}\`) on a Redis Cluster (got ${prefix})`]);
    expect(issuesOf({ CHATGATE_QUEUE_PREFIX: prefix })).toEqual([]);
  });

  it('takes any hash-tagged queue prefix on a cluster', () => {
    for (const prefix of ['{cgq}', 'team-{q}', '{a}b']) expect(issuesOf({ REDIS_CLUSTER_NODES: '10.0.0.1:7000', CHATGATE_QUEUE_PREFIX: prefix })).toEqual([]);
  });
});
