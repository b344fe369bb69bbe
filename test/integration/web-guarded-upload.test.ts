/**
 * The web chat as the gateway builds it (createChannels: behind the access guard, as `npm start`
 * serves it) takes a file upload from its own page and from curl, and still refuses one from
 * another site. The upload tests elsewhere build the web channel without the guard.
 */
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import type { Channel } from '../../channels/channel.js';
import { createChannels } from '../../src/gateway/channels.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createSilentLogger } from '../../src/log.js';

let started: Channel[] = [];

afterEach(async () => {
  for (const channel of started) await channel.stop();
  started = [];
});

async function guardedWebChat(host: string, monitorToken?: string): Promise<{ app: Hono; received: InboundMessage[] }> {
  const channels = await createChannels({ logger: createSilentLogger() }, { host, keyPrefix: 'guarded-upload:', maxAttachmentBytes: 4096, ...(monitorToken ? { monitorToken } : {}) });
  const received: InboundMessage[] = [];
  for (const channel of channels.list) await channel.start(async (message) => void received.push(message));
  started = channels.list;
  const app = new Hono();
  channels.mount!(app);
  return { app, received };
}

function upload(name: string, headers: Record<string, string> = {}): RequestInit {
  const form = new FormData();
  form.set('text', 'read this');
  form.set('clientMessageId', name);
  form.set('file', new File(['a,b\n1,2\n'], `${name}.csv`, { type: 'text/csv' }));
  return { method: 'POST', body: form, headers };
}

describe('web chat uploads behind the gateway\'s guard', () => {
  it('on loopback: takes an upload from its page and from curl, refuses one from another site and other form types', async () => {
    const { app, received } = await guardedWebChat('127.0.0.1');
    const url = 'http://127.0.0.1:8787/api/chat/g1/messages';
    const fromPage = await app.request(url, upload('page', { host: '127.0.0.1:8787', origin: 'http://127.0.0.1:8787', 'sec-fetch-site': 'same-origin' }));
    expect(fromPage.status, await fromPage.clone().text()).toBe(202);
    expect((await app.request(url, upload('curl', { host: '127.0.0.1:8787' }))).status).toBe(202);
    expect(received.map((m) => m.attachments?.[0]?.fileName)).toEqual(['page.csv', 'curl.csv']);
    const crossSite = await app.request(url, upload('evil', { host: '127.0.0.1:8787', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }));
    expect(crossSite.status).toBe(403);
    const urlEncoded = await app.request(url, { method: 'POST', body: 'text=hi', headers: { host: '127.0.0.1:8787', 'content-type': 'application/x-www-form-urlencoded' } });
    expect(urlEncoded.status).toBe(415);
    expect(received).toHaveLength(2);
  });

  it('off loopback: an upload needs the token like every web chat request', async () => {
    const token = 'a-monitor-token-0123456789';
    const { app, received } = await guardedWebChat('0.0.0.0', token);
    const url = 'http://chat.example/api/chat/g2/messages';
    expect((await app.request(url, upload('anon', { host: 'chat.example' }))).status).toBe(401);
    expect((await app.request(url, upload('authed', { host: 'chat.example', authorization: `Bearer ${token}` }))).status).toBe(202);
    expect(received.map((m) => m.attachments?.[0]?.fileName)).toEqual(['authed.csv']);
  });
});
