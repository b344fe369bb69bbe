import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolCall } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { createSessionNotes } from '../../src/redis/notes.js';
import { searchTranscript } from '../../src/redis/transcript.js';
import { evaluateExpression } from '../../workers/tools/calculator-parser.js';
import { ToolRegistry } from '../../workers/tools/registry.js';
import { defineTool, type ToolContext } from '../../workers/tools/types.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const call = (name: string, args: unknown): ToolCall => ({ id: 'c1', type: 'function', function: { name, arguments: JSON.stringify(args) } });

describe('calculator parser', () => {
  it.each([
    ['1 + 2 * 3', 7], ['(1 + 2) * 3', 9], ['2 ^ 3 ^ 2', 512], ['-2 ^ 2', -4], ['10 % 4', 2], ['sqrt(16) + abs(-3)', 7],
    ['max(1, 5, 3)', 5], ['round(2.5)', 3], ['1.5e3 / 3', 500], ['2 × 3 ÷ 4', 1.5], ['pi', Math.PI], ['2**10', 1024],
  ])('%s = %s', (expression, expected) => {
    expect(evaluateExpression(expression)).toBeCloseTo(expected, 10);
  });

  it.each([
    ['1 / 0', /division by zero/], ['process.exit(1)', /unexpected character/], ['process', /unknown name "process"/], ['constructor(1)', /unknown function/],
    ['1 +', /unexpected end/], ['(1', /expected "\)"/], ['2; 3', /unexpected character/], ['1 2', /unexpected "2"/],
  ])('rejects %s', (expression, error) => {
    expect(() => evaluateExpression(expression)).toThrow(error);
  });
});

describe('tool registry', () => {
  let t: TestRedis;
  let context: Omit<ToolContext, 'signal'>;
  let compactions: Array<string | undefined>;

  beforeEach(() => {
    t = createTestRedis();
    const keys = sessionKeys('web:t', t.keyPrefix);
    compactions = [];
    context = {
      sessionId: 'web:t', notes: createSessionNotes(t.redis, keys), now: () => new Date('2026-01-02T03:04:05Z'),
      searchTranscript: (query, limit) => searchTranscript(t.redis, keys, query, { limit }),
      requestCompaction: (focus) => { compactions.push(focus); }, callId: 'call_1', idempotencyKey: 'web:t:m1:call_1',
    };
  });
  afterEach(async () => { await t.cleanup(); });

  it('offers the built-ins as JSON-schema function tools and accepts user tools', () => {
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'echo', description: 'echo', schema: z.object({ text: z.string() }), run: ({ text }) => text }));
    const names = registry.schemas().map((s) => s.function.name);
    expect(names).toEqual(['current_time', 'calculator', 'remember', 'forget', 'search_history', 'compact', 'echo']);
    const echo = registry.schemas().find((s) => s.function.name === 'echo')!;
    expect(echo.function.parameters).toMatchObject({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    expect(echo.function.parameters).not.toHaveProperty('$schema');
    expect(() => registry.register(defineTool({ name: 'bad name', description: '', schema: z.object({}), run: () => '' }))).toThrow(/tool name/);
  });

  it('remembers and forgets notes, tells time, requests compaction', async () => {
    const registry = new ToolRegistry();
    expect((await registry.execute(call('remember', { key: 'k', note: 'v' }), context)).text).toBe('remembered "k"');
    expect(await context.notes.list()).toEqual({ k: 'v' });
    expect((await registry.execute(call('forget', { key: 'k' }), context)).text).toBe('forgot "k"');
    expect((await registry.execute(call('forget', { key: 'k' }), context)).text).toBe('no note "k"');
    expect(JSON.parse((await registry.execute(call('current_time', { timezone: 'UTC' }), context)).text)).toMatchObject({ utc: '2026-01-02T03:04:05.000Z' });
    expect((await registry.execute(call('current_time', { timezone: 'Not/AZone' }), context)).text).toMatch(/^Error: tool current_time failed/);
    await registry.execute(call('compact', { focus: 'orders' }), context);
    expect(compactions).toEqual(['orders']);
  });

  it('says a side-effecting call that timed out may have taken effect, so the model checks before calling it again', async () => {
    const hang = (name: string, sideEffects: boolean) => defineTool({ name, description: 'hangs', schema: z.object({}), sideEffects, timeoutMs: 20, run: () => new Promise(() => undefined) });
    const registry = new ToolRegistry([hang('book', true), hang('lookup', false)]);
    expect((await registry.execute(call('book', {}), context)).text)
      .toBe('Error: tool book failed: timed out after 20 ms. It may or may not have taken effect; check its effect before calling it again (idempotency key web:t:m1:call_1)');
    expect((await registry.execute(call('lookup', {}), context)).text).toBe('Error: tool lookup failed: timed out after 20 ms');
  });
});
