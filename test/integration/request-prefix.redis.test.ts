import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText } from '../../src/core/messages.js';
import type { TurnProducer } from '../../src/queue/producer.js';
import type { FakeOpenAI, FakeReply, FakeRequest } from '../fakes/openai-server.js';
import type { OutboundCollector } from '../helpers/redis.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

let seq = 0;
function inbound(text: string): InboundMessage {
  seq++;
  return { id: `web:p1:${seq}`, channel: 'web', chatId: 'p1', userId: 'u1', userName: 'Ann', text, attachments: [], receivedAt: Date.now() };
}

const isAgent = (r: FakeRequest) => !String(r.messages[0]?.content).startsWith('You write handoff summaries');

/** Answers `remember`, `forget` and `compact` with that tool call, everything else with text. */
function agentReply(r: FakeRequest): FakeReply {
  if (!isAgent(r)) return { content: '## Goal\nchat about orders' };
  const last = r.messages[r.messages.length - 1]!;
  const text = last.role === 'user' ? messageText(last) : '';
  if (text === 'remember') return { toolCalls: [{ name: 'remember', arguments: { key: 'order', note: 'ORD-77' } }] };
  if (text === 'forget') return { toolCalls: [{ name: 'forget', arguments: { key: 'order' } }] };
  if (text === 'compact') return { toolCalls: [{ name: 'compact', arguments: {} }] };
  return { content: `ok ${r.index}` };
}

describe('the request between compactions', () => {
  let rig: WorkerRig;
  let fake: FakeOpenAI;
  let producer: TurnProducer;
  let out: OutboundCollector;

  const say = async (text: string) => {
    const before = out.replies.length;
    await producer.submitInbound(inbound(text));
    await out.waitFor((r) => r.length > before);
  };

  beforeEach(async () => {
    rig = await openWorkerRig(agentReply);
    ({ fake, producer, out } = rig);
    await rig.start();
  });
  afterEach(async () => { await rig.close(); });

  it('only grows at its end across remember and forget calls: every request starts with the previous one', async () => {
    for (const text of ['hello', 'remember', 'how are you', 'forget', 'bye']) await say(text);
    const requests = fake.requests.filter(isAgent);
    expect(requests.length).toBeGreaterThanOrEqual(7);
    for (let k = 1; k < requests.length; k++) {
      const previous = requests[k - 1]!.messages;
      expect(requests[k]!.messages.slice(0, previous.length), `request ${k}`).toEqual(previous);
    }
  });

  it('shows the notes as of the last summary once a compaction rewrote the history', async () => {
    await say('remember');
    // Enough history beyond the protected tail for the compaction to summarise something.
    for (let k = 0; k < 10; k++) await say(`filler ${k}: ${'the quick brown fox jumps over the lazy dog '.repeat(40)}`);
    await say('compact');
    const requests = fake.requests.filter(isAgent);
    const after = requests[requests.length - 1]!;
    expect(after.messages[1]?.role).toBe('system');
    expect(messageText(after.messages[1]!)).toContain('as of the last summary');
    expect(messageText(after.messages[1]!)).toContain('order: ORD-77');
    // Before it, no request carried a notes block: the remember call in the history did.
    expect(requests.slice(0, -1).every((r) => !messageText(r.messages[1]!).includes('as of the last summary'))).toBe(true);
  });
});
