/**
 * A gateway's heartbeat says its channels are connected as soon as they are: `chatgate status`
 * right after the ready banner must not say "web connecting" until the next renewal (every third
 * of the TTL: 5 s by default). The TTL here is long, so no renewal happens during the test.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayOptions } from '../../src/cli/compose.js';
import { readerFor } from '../../src/cli/sessions.js';
import { loadConfig } from '../../src/config.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { createSilentLogger } from '../../src/log.js';
import { readHeartbeats } from '../../src/redis/heartbeats.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

let t: TestRedis | undefined;
let gateway: GatewayHandle | undefined;

afterEach(async () => {
  await gateway?.close();
  await t?.cleanup();
  gateway = undefined;
  t = undefined;
});

describe('gateway heartbeat', () => {
  it('names its channels connected once they started, without waiting for the next beat', async () => {
    t = createTestRedis();
    const config = loadConfig({
      REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, CHATGATE_HTTP_PORT: '0',
      OPENAI_API_KEY: 'test-key', CHATGATE_HEARTBEAT_TTL_MS: '600000',
    });
    gateway = await startGateway({ redis: t.redis, logger: createSilentLogger(), sessions: readerFor(config, { redis: t.redis }) }, gatewayOptions(config));
    const beats = (await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes.filter((beat) => beat.role === 'gateway');
    expect(beats).toHaveLength(1);
    expect(beats[0]!.gateway?.channels).toEqual({ web: { state: 'connected' } });
  });
});
