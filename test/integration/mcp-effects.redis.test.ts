/**
 * A side-effecting MCP tool in the effect log (workers/tool-round.ts, the step log in Redis): its
 * start is recorded before it runs, and a call a crash left started but unrecorded is not run again.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ToolCall } from '../../src/core/messages.js';
import { createSilentLogger } from '../../src/log.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { acquireLease } from '../../src/redis/lease.js';
import { createStepLog, type StepLog } from '../../src/redis/step-log.js';
import { runToolCall, type ToolRound } from '../../workers/tool-round.js';
import { mcpServers, openMcpRig, TEST_SERVER, type McpRig } from '../helpers/mcp.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { createTokenCounter } from '../../src/llm/encodings.js';

const call: ToolCall = { id: 'call_act', type: 'function', function: { name: 'mcp__t__act', arguments: '{}' } };

describe('a side-effecting MCP tool and the effect log', () => {
  let t: TestRedis;
  let rig: McpRig;
  let steps: StepLog;

  beforeEach(async () => {
    t = createTestRedis();
    rig = await openMcpRig(mcpServers({ t: { command: process.execPath, args: [TEST_SERVER, 'ok'], connectTimeoutMs: 30_000 } }));
    const keys = sessionKeys('web:fx', t.keyPrefix);
    steps = createStepLog(t.redis, { keys, turnId: 'm1', fence: (await acquireLease(t.redis, keys, 30_000))! });
    await steps.recordAnswer({ message: { role: 'assistant', content: null, tool_calls: [call] }, usage: null, finishReason: 'tool_calls', model: 'gpt-4o-mini' });
  });
  afterEach(async () => {
    await rig.close();
    await t.cleanup();
  });

  const round = async (recorded: boolean): Promise<ToolRound> => ({
    tools: rig.tools, steps, log: createSilentLogger(), recorded: recorded ? await steps.read() : null, maxTokens: 4000, tokenCounter: createTokenCounter(),
    context: (callId) => ({
      sessionId: 'web:fx', callId, idempotencyKey: `web:fx:m1:${callId}`, notes: { list: async () => ({}), set: async () => undefined, remove: async () => false },
      searchTranscript: async () => [], requestCompaction: () => undefined, now: () => new Date(),
    }),
    beforeRun: async () => undefined,
  });
  const actCalls = () => rig.metrics.events.filter((event) => event.type === 'mcp_tool_call' && event.tool === 'act').length;

  it('records the start before the call, and the result with it', async () => {
    const { text } = await runToolCall(await round(false), call);
    expect(JSON.parse(text)).toEqual({ meta: { idempotencyKey: 'web:fx:m1:call_act' } });
    expect(await steps.read()).toMatchObject({ started: new Set(['call_act']), results: new Map([['call_act', text]]) });
    expect(actCalls()).toBe(1);
  });

  it('does not run a call again that a crash left started without a result, and says its outcome is unknown', async () => {
    await steps.recordStarted('call_act');
    const { text } = await runToolCall(await round(true), call);
    expect(text).toMatch(/^Error: the outcome of this mcp__t__act call is unknown: .* \(idempotency key web:fx:m1:call_act\)\.$/);
    expect(actCalls()).toBe(0);
  });
});
