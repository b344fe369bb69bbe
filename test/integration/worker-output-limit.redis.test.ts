import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLlmClient } from '../../src/llm/client.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import { runWorker } from '../../workers/main.js';
import { collectOutbound, createTestRedis } from '../helpers/redis.js';

type Body = Record<string, unknown>;

/** A chat-completions endpoint that records raw request bodies; `reject` names a field it refuses as OpenAI does. */
async function startRecorder(reject?: string): Promise<{ baseURL: string; bodies: Body[]; close(): Promise<void> }> {
  const bodies: Body[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
      bodies.push(body);
      res.setHeader('content-type', 'application/json');
      if (reject && reject in body) {
        const other = reject === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens';
        res.writeHead(400).end(JSON.stringify({ error: { message: `Unsupported parameter: '${reject}' is not supported with this model. Use '${other}' instead.`, type: 'invalid_request_error', param: reject, code: 'unsupported_parameter' } }));
        return;
      }
      res.end(JSON.stringify({
        id: 'x', object: 'chat.completion', created: 0, model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
      }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    bodies,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

describe('output reserve', () => {
  let recorder: Awaited<ReturnType<typeof startRecorder>>;
  afterEach(async () => { await recorder.close(); });

  describe('llm client', () => {
    it('sends the output limit as max_tokens, and nothing when there is none', async () => {
      recorder = await startRecorder();
      const llm = createLlmClient({ baseURL: recorder.baseURL, model: 'm' });
      await llm.complete({ messages: [{ role: 'user', content: 'x' }], maxTokens: 512 });
      await llm.complete({ messages: [{ role: 'user', content: 'x' }] });
      expect(recorder.bodies[0]).toMatchObject({ max_tokens: 512 });
      expect(recorder.bodies[0]).not.toHaveProperty('max_completion_tokens');
      expect(recorder.bodies[1]).not.toHaveProperty('max_tokens');
      expect(recorder.bodies[1]).not.toHaveProperty('max_completion_tokens');
    });

    it('switches to max_completion_tokens once when the endpoint refuses max_tokens by name, and keeps it', async () => {
      recorder = await startRecorder('max_tokens');
      const llm = createLlmClient({ baseURL: recorder.baseURL, model: 'o3-mini', retry: { maxRetries: 0 } });
      const first = await llm.complete({ messages: [{ role: 'user', content: 'x' }], maxTokens: 300 });
      await llm.complete({ messages: [{ role: 'user', content: 'y' }], maxTokens: 300 });
      expect(first.message.content).toBe('ok');
      expect(recorder.bodies.map((b) => [b.max_tokens, b.max_completion_tokens])).toEqual([[300, undefined], [undefined, 300], [undefined, 300]]);
    });
  });

  describe('agent worker', () => {
    let t: ReturnType<typeof createTestRedis>;
    beforeEach(() => { t = createTestRedis(); });
    afterEach(async () => { await t.cleanup(); });

    it('sends the configured reservedOutputTokens with every agent call', async () => {
      recorder = await startRecorder();
      const worker = await runWorker({ redis: t.redis }, {
        keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, contextWindow: 16_000, reservedOutputTokens: 700,
        llm: { baseURL: recorder.baseURL, apiKey: 'k', model: 'gpt-4o-mini' },
      });
      const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix });
      const out = await collectOutbound(t);
      try {
        await producer.submitInbound({ id: 'web:c:1', channel: 'web', chatId: 'c', userId: 'u', userName: 'U', text: 'hi', attachments: [], receivedAt: Date.now() });
        await out.waitFor((r) => r.length === 1);
        expect(recorder.bodies).toHaveLength(1);
        expect(recorder.bodies[0]).toMatchObject({ model: 'gpt-4o-mini', max_tokens: 700 });
      } finally {
        await worker.close();
        await out.close();
        await producer.close();
      }
    });
  });
});
