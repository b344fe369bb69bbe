/**
 * The roles run apart on one machine with one configuration, as docs/operating.md shows them (a
 * terminal each): a worker started first must not take the gateway's HTTP port. Both run, and a
 * message sent to the gateway's web chat is answered by the worker.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closedPort, spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { createTestRedis } from '../helpers/redis.js';

interface WebReply { seq: number; text: string }

describe('chatgate gateway and chatgate worker started apart', () => {
  const t = createTestRedis();
  let worker: ChatgateProcess | undefined;
  let gateway: ChatgateProcess | undefined;
  afterAll(async () => {
    await stopChatgate(gateway);
    await stopChatgate(worker);
    await t.cleanup();
  });

  it('both run on the same configuration (one CHATGATE_HTTP_PORT), the worker first, and a message is answered', async () => {
    const env = {
      ...t.env,
      CHATGATE_HTTP_PORT: String(await closedPort()), CHATGATE_LOG_LEVEL: 'warn',
      CHATGATE_DEMO_WORD_DELAY_MS: '0', // the whole reply at once (~4 s at the default pace)
    };
    worker = spawnChatgate(['worker', '--demo'], env);
    await worker.ready();
    expect(worker.stderr.text).toContain('No health or metrics server (set CHATGATE_WORKER_HTTP_PORT');
    gateway = spawnChatgate(['gateway', '--demo'], env);
    const [, chatUrl] = await gateway.waitFor('stderr', /^Web chat: +(http:\/\/\S+)$/m);
    expect(new URL(chatUrl!).port).toBe(env.CHATGATE_HTTP_PORT);
    const base = new URL(chatUrl!).origin;
    const posted = await fetch(`${base}/api/chat/apart/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'What is 6*7?', clientMessageId: 'm1' }),
    });
    expect(posted.status).toBe(202);
    let after = 0;
    let answer: WebReply | undefined;
    for (let poll = 0; poll < 10 && !answer; poll++) {
      const polled = (await (await fetch(`${base}/api/chat/apart/messages?after=${after}&timeoutMs=20000`)).json()) as { messages: WebReply[]; next: number };
      answer = polled.messages.find((r) => r.text.includes('[demo model]'));
      after = polled.next;
    }
    expect(answer?.text).toContain('42');
    await stopChatgate(gateway);
    await stopChatgate(worker);
    expect(await gateway.exited).toBe(0);
    expect(await worker.exited).toBe(0);
  }, 240_000);
});
