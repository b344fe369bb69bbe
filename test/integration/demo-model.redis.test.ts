import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/core/messages.js';
import { countMessageTokens, countTextTokens } from '../../src/llm/encodings.js';
import { createLlmClient, type LlmClient, type ToolSchema } from '../../src/llm/client.js';
import { DEMO_LABEL, startDemoModel, type DemoModel } from '../../src/llm/demo-model.js';
import { SUMMARY_SECTIONS, buildSummaryPrompt } from '../../src/llm/summarizer.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import { createRedisSessionView } from '../../src/redis/session-reader.js';
import { runWorker } from '../../workers/main.js';
import { BUILTIN_TOOLS } from '../../workers/tools/builtins.js';
import { ToolRegistry } from '../../workers/tools/registry.js';
import { collectOutbound, createTestRedis, type TestRedis } from '../helpers/redis.js';

describe('offline demo model', () => {
  let demo: DemoModel;
  let llm: LlmClient;
  const tools: ToolSchema[] = new ToolRegistry(BUILTIN_TOOLS).schemas();

  beforeEach(async () => {
    demo = await startDemoModel();
    llm = createLlmClient({ baseURL: demo.baseUrl, apiKey: 'none', model: demo.model });
  });
  afterEach(async () => { await demo.close(); });

  const ask = (text: string) => llm.complete({ messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: text }], tools });

  it('is an OpenAI-compatible endpoint on loopback that lists its model', async () => {
    expect(demo.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const models = (await (await fetch(`${demo.baseUrl}/models`)).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((m) => m.id)).toEqual(['chatgate-demo']);
  });

  it.each([
    ['what time is it?', 'current_time', {}],
    ['what is 12*(3+4)?', 'calculator', { expression: '12*(3+4)' }],
    ['remember that my name is Ada', 'remember', { key: 'name-ada', note: 'my name is Ada' }],
  ])('calls a tool for %j', async (text, name, args) => {
    const result = await ask(text);
    expect(result.message.tool_calls?.map((c) => c.function.name)).toEqual([name]);
    expect(JSON.parse(result.message.tool_calls![0].function.arguments)).toEqual(args);
    expect(result.message.content).toContain(DEMO_LABEL);
  });

  it('answers with a labelled text after the tool results and reports usage counted with the tokenizer', async () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'what is 2+2?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calculator', arguments: '{"expression":"2+2"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '{"expression":"2+2","result":4}' },
    ];
    const result = await llm.complete({ messages, tools });
    expect(result.message.tool_calls).toBeUndefined();
    expect(result.message.content).toMatch(/^\[demo model\] The tool answered: .*"result":4/);
    expect(result.usage!.promptTokens).toBe(countMessageTokens(messages, demo.model) + countTextTokens(JSON.stringify(tools), demo.model));
    expect(result.usage!.completionTokens).toBe(countTextTokens(result.message.content!, demo.model));
  });

  it('says a tool error once, full stop included, and echoes a side question without its framing', async () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'remember that my name is Ada' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'remember', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'Error: the user denied this call of remember; it was not run. Do not call it again unless they ask for it.' },
    ];
    const after = (await llm.complete({ messages, tools })).message.content!;
    expect(after).toContain('unless they ask for it. (A real model');
    expect(after).not.toContain('..');
    const side = (await llm.complete({ messages: [{ role: 'user', content: '[Side question, asked beside the conversation: answer it briefly.]\nWhat was the ticket number?' }] })).message.content!;
    expect(side).toContain('You said: "What was the ticket number?"');
    expect(side).not.toContain('Side question');
  });

  it('answers summariser prompts with the fixed sections, keeping identifiers and merging the previous summary', async () => {
    const turns: ChatMessage[] = [{ role: 'user', content: 'my order ORD-48213-XK is late, ticket #4471' }, { role: 'assistant', content: 'checking, it is 2026-12-01T08:04:41.492Z now' }];
    const first = await llm.complete({ messages: buildSummaryPrompt({ turns, previousSummary: null, focus: 'the order', targetTokens: 2000, mustKeep: ['ORD-48213-XK', '#4471'] }) });
    const summary = first.message.content!;
    for (const section of SUMMARY_SECTIONS) expect(summary).toContain(`## ${section}`);
    expect(summary).toContain('ORD-48213-XK');
    expect(summary).toContain('#4471');
    expect(summary).toContain('Focus requested: the order');
    expect(summary).toContain(DEMO_LABEL);
    expect(summary).not.toContain('2026-12-01T08:04:41.492Z'); // a clock's timestamp is not a reference
    const next = await llm.complete({ messages: buildSummaryPrompt({ turns: [{ role: 'user', content: 'also INV-2024-001' }], previousSummary: summary, targetTokens: 2000, mustKeep: ['INV-2024-001'] }) });
    expect(next.message.content).toContain('ORD-48213-XK');
    expect(next.message.content).toContain('INV-2024-001');
    expect(next.message.content!.match(/## Goal/g)).toHaveLength(1);
  });
});

describe('a worker on the demo model', () => {
  let t: TestRedis;
  beforeEach(() => { t = createTestRedis(); });
  afterEach(async () => { await t.cleanup(); });

  /** A worker on the demo model (window 8192, reserve 4096) with a web chat whose replies are collected. */
  async function demoChat(chatId: string) {
    const demo = await startDemoModel();
    const worker = await runWorker({ redis: t.redis }, {
      keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, contextWindow: 8192, reservedOutputTokens: 4096, threshold: 0.5,
      llm: { baseURL: demo.baseUrl, apiKey: 'demo', model: demo.model },
    });
    const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix });
    // Replies only: a compaction's one-line notice is not the demo model's answer.
    const out = await collectOutbound(t);
    const replyTexts = () => out.replies.filter((reply) => reply.kind === 'reply').map((reply) => reply.text);
    const reader = createRedisSessionView({ redis: t.redis }, { keyPrefix: t.keyPrefix, contextWindow: 8192, reservedOutputTokens: 4096 });
    let sent = 0;
    return {
      get replies() { return replyTexts(); },
      /** Sends one message and resolves with the session's detail once its reply is out. */
      async say(text: string) {
        const before = replyTexts().length;
        sent += 1;
        await producer.submitInbound({ id: `m${sent}`, channel: 'web', chatId, userId: 'u', userName: 'u', text, attachments: [], chatType: 'private', receivedAt: Date.now() });
        await out.waitFor(() => replyTexts().length > before);
        return (await reader.getSession(`web:${chatId}`))!;
      },
      async close() {
        await out.close();
        await worker.close();
        await producer.close();
        await demo.close();
      },
    };
  }

  it('compacts a session after a handful of turns without any key (window 8192, reserve 4096)', async () => {
    const chat = await demoChat('demo');
    try {
      let detail = await chat.say('tell me more, part 1');
      for (let turn = 2; turn <= 12 && detail.compactions.length === 0; turn += 1) {
        detail = await chat.say(turn === 2 ? 'remember that my order is ORD-48213-XK' : `tell me more, part ${turn}`);
      }
      expect(detail.compactions[0]).toMatchObject({ layer: 'in-loop', outcome: 'compacted' });
      expect(detail.compactions[0].tokensAfter).toBeLessThan(detail.compactions[0].tokensBefore);
      expect(detail.summary).toContain(DEMO_LABEL);
      expect(detail.notes.map((n) => n.text)).toEqual(['my order is ORD-48213-XK']);
      expect(chat.replies.every((r) => r.startsWith(DEMO_LABEL))).toBe(true);
    } finally {
      await chat.close();
    }
  });

  it('after several compactions of a session that asks for the time, pins the order id the user typed and no clock timestamp', async () => {
    const chat = await demoChat('clock');
    const compacted = (d: { compactions: Array<{ outcome: string }> }) => d.compactions.filter((c) => c.outcome === 'compacted').length;
    try {
      let detail = await chat.say('my order ORD-48213-XK has not arrived');
      for (let turn = 2; turn <= 60 && compacted(detail) < 3; turn += 1) {
        detail = await chat.say(turn % 2 === 0 ? 'what time is it now?' : `tell me more, part ${turn}`);
      }
      expect(compacted(detail)).toBeGreaterThanOrEqual(3);
      expect(`${detail.summary}\n${detail.pinnedFacts.join('\n')}`).toContain('ORD-48213-XK');
      expect(detail.pinnedFacts.filter((f) => /T\d\d:\d\d:\d\d/.test(f))).toEqual([]);
    } finally {
      await chat.close();
    }
  });
});
