/**
 * Tool call ids as some OpenAI-compatible endpoints send them: empty, or the same id for several
 * calls of one answer. Each call keeps its own result, approval and idempotency key, and every
 * request answers each call of an assistant message with exactly one tool message of its id.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decideAndWake } from '../../src/approvals/decide.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import { createSilentLogger } from '../../src/log.js';
import { defineTool } from '../../workers/tools/types.js';
import type { FakeRequest } from '../fakes/openai-server.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const SESSION = 'web:ids';
const message = (id: string, text: string): InboundMessage => ({ id, channel: 'web', chatId: 'ids', userId: 'u', userName: 'U', text, attachments: [], receivedAt: Date.now() });
const hasTools = (r: FakeRequest) => r.messages.some((m) => m.role === 'tool');

/** Every assistant tool call of `messages` answered by exactly one tool message, and no two calls sharing an id. */
function expectEachCallAnsweredOnce(messages: readonly ChatMessage[]): void {
  const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((call) => call.id) : []));
  const answers = messages.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : []));
  expect(new Set(calls).size).toBe(calls.length);
  expect(calls.every((id) => id !== '')).toBe(true);
  expect(answers.sort()).toEqual([...calls].sort());
}

describe('tool call ids from the model', () => {
  let rig: WorkerRig;
  let written: string[];

  const write = (approval: 'ask' | 'auto') => defineTool({
    name: 'write', description: 'Writes a file.', schema: z.object({ file: z.string() }), sideEffects: true, approval,
    run: ({ file }, context) => { written.push(`${file}@${context.idempotencyKey}`); return `wrote ${file}`; },
  });

  beforeEach(async () => { rig = await openWorkerRig(); written = []; });
  afterEach(async () => { await rig.close(); });

  it('runs each call once when two share an id and one has none, and answers each with its own tool message', async () => {
    const { fake, producer, out } = rig;
    await rig.start({ tools: [write('auto')] });
    fake.setHandler((r) => (hasTools(r) ? { content: 'done' } : { toolCalls: [
      { id: 'same', name: 'write', arguments: { file: 'a' } }, { id: 'same', name: 'write', arguments: { file: 'b' } }, { id: '', name: 'write', arguments: { file: 'c' } },
    ] }));
    await producer.submitInbound(message('web:ids:1', 'write a, b and c'));
    await out.waitFor((replies) => replies.some((reply) => reply.text === 'done'));
    expect(written.map((entry) => entry.split('@')[0])).toEqual(['a', 'b', 'c']);
    expect(new Set(written.map((entry) => entry.split('@')[1])).size).toBe(3);
    const next = fake.requests.find(hasTools)!;
    expectEachCallAnsweredOnce(next.messages);
    expect(next.messages.filter((m) => m.role === 'tool').map((m) => messageText(m))).toEqual(['wrote a', 'wrote b', 'wrote c']);
  });

  it('gives a call an id of its own when an earlier round of the turn used its id', async () => {
    const { fake, producer, out } = rig;
    await rig.start({ tools: [write('auto')] });
    fake.setHandler((r) => {
      const rounds = r.messages.filter((m) => m.role === 'assistant').length;
      return rounds < 2 ? { toolCalls: [{ id: 'call_0', name: 'write', arguments: { file: `r${rounds}` } }] } : { content: 'done' };
    });
    await producer.submitInbound(message('web:ids:1', 'write twice'));
    await out.waitFor((replies) => replies.some((reply) => reply.text === 'done'));
    expect(written.map((entry) => entry.split('@')[0])).toEqual(['r0', 'r1']);
    expect(new Set(written.map((entry) => entry.split('@')[1])).size).toBe(2);
    expectEachCallAnsweredOnce(fake.requests.at(-1)!.messages);
  });

  it('never runs a denied call because another call of its round had the same id and was approved', async () => {
    const { t, fake, producer, out } = rig;
    await rig.start({ tools: [write('ask')] });
    fake.setHandler((r) => (hasTools(r) ? { content: 'done' } : { toolCalls: [{ id: 'same', name: 'write', arguments: { file: 'secrets.txt' } }, { id: 'same', name: 'write', arguments: { file: 'keep.txt' } }] }));
    await producer.submitInbound(message('web:ids:1', 'write'));
    await out.waitFor((replies) => replies.filter((reply) => reply.text.includes('Approval needed')).length === 2);
    const idOf = (file: string) => /\(([a-z0-9]{6})\)/.exec(out.replies.find((reply) => reply.text.includes(file))!.text)![1]!;
    const deps = { store: createApprovalStore(t.redis, { keyPrefix: t.keyPrefix }), producer, logger: createSilentLogger() };
    const by = { userId: 'u', userName: 'U' };
    await decideAndWake(deps, SESSION, idOf('secrets.txt'), { decision: 'denied', via: 'user', by });
    await decideAndWake(deps, SESSION, idOf('keep.txt'), { decision: 'approved', via: 'user', by });
    await out.waitFor((replies) => replies.some((reply) => reply.text === 'done'));
    expect(written.map((entry) => entry.split('@')[0])).toEqual(['keep.txt']);
    expectEachCallAnsweredOnce(fake.requests.find(hasTools)!.messages);
  });
});
