/**
 * A tool call the model got wrong (a name outside the chat-completions rule, arguments that are not
 * a JSON object, as a cut-off answer leaves them) is answered with an error the model reads, and
 * stays in the history in a form the provider takes back: one bad call must not make every later
 * request of the chat fail. OpenAI refuses such names; strict endpoints and relays such arguments.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import type { FakeRequest } from '../fakes/openai-server.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

let seq = 0;
const message = (text: string): InboundMessage => ({ id: `web:hist:${++seq}`, channel: 'web', chatId: 'hist', userId: 'u', userName: 'U', text, attachments: [], receivedAt: Date.now() });
const lastUser = (r: FakeRequest) => messageText([...r.messages].reverse().find((m) => m.role === 'user')!);

/** Whether every tool call of `messages` has a name a provider takes and arguments that are a JSON object. */
function replayable(messages: readonly ChatMessage[]): boolean {
  return messages.every((m) => m.role !== 'assistant' || (m.tool_calls ?? []).every((call) => {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(call.function.name)) return false;
    try {
      const args: unknown = JSON.parse(call.function.arguments);
      return args !== null && typeof args === 'object' && !Array.isArray(args);
    } catch {
      return false;
    }
  }));
}

describe('a malformed tool call in the history', () => {
  let rig: WorkerRig;

  beforeEach(async () => { rig = await openWorkerRig(); });
  afterEach(async () => { await rig.close(); });

  it('is answered with errors the model reads, and the chat goes on: later requests carry it in a form the provider takes', async () => {
    const { fake, producer, out } = rig;
    await rig.start();
    fake.setHandler((r) => {
      if (lastUser(r) !== 'go' || r.messages.at(-1)!.role === 'tool') return { content: `answered ${lastUser(r)}` };
      return { toolCalls: [
        { name: 'functions.calculator', arguments: { expression: '1+1' } }, { name: 'calculator', arguments: '{"expression": "2*' },
        { name: 'calculator', arguments: '' }, { name: 'calculator', arguments: '[1]' }, { name: 'calculator', arguments: { expression: '6*7' } },
      ] };
    });
    await producer.submitInbound(message('go'));
    await out.waitFor((replies) => replies.length === 1);
    expect(out.replies[0]!.text).toBe('answered go');
    const results = fake.requests[1]!.messages.filter((m) => m.role === 'tool').map((m) => messageText(m));
    expect(results[0]).toMatch(/^Error: unknown tool "functions\.calculator"/);
    expect(results[1]).toMatch(/^Error: the arguments of calculator are not valid JSON/);
    expect(results[2]).toMatch(/^Error: invalid arguments for calculator/);
    expect(results[3]).toMatch(/^Error: invalid arguments for calculator/);
    expect(JSON.parse(results[4]!)).toMatchObject({ result: 42 });
    expect(replayable(fake.requests[1]!.messages)).toBe(true);
    const calls = fake.requests[1]!.messages.find((m) => m.role === 'assistant')!;
    expect(calls.role === 'assistant' && calls.tool_calls?.[4]?.function.arguments).toBe('{"expression":"6*7"}');

    await producer.submitInbound(message('and then?'));
    await out.waitFor((replies) => replies.length === 2);
    expect(out.replies[1]!.text).toBe('answered and then?');
    expect(replayable(fake.requests.at(-1)!.messages)).toBe(true);
  });
});
