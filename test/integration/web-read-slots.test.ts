/**
 * Each open event stream or long poll holds memory (about 40 KB for a stream) until it ends, and
 * reads pass no rate limit: one client address holds at most `maxReadsPerClient` at once. One more
 * is answered 429 with Retry-After before anything is held, and a slot is free again once a read ends.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import { pollUntil } from '../helpers/waits.js';

let channel: WebChannel;
let server: ServerType;
let base: string;
/** Closes each stream a test opened. */
const opened: Array<() => void> = [];

beforeEach(async () => {
  channel = createWebChannel({}, { maxReadsPerClient: 2, keepAliveMs: 60_000 });
  await channel.start(async () => undefined);
  server = serve({ fetch: channel.app.fetch, port: 0, hostname: '127.0.0.1' });
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  for (const close of opened.splice(0)) close();
  await channel.stop();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Opens an event stream of `conversation` and keeps it open (until aborted); resolves with its response. */
async function openStream(conversation: string): Promise<Response> {
  const abort = new AbortController();
  opened.push(() => abort.abort());
  return fetch(`${base}/api/chat/${conversation}/events`, { headers: { accept: 'text/event-stream' }, signal: abort.signal });
}

const poll = (conversation: string) => fetch(`${base}/api/chat/${conversation}/messages?after=0&timeoutMs=0`);

describe('reads per client address', () => {
  it('refuses one stream or long poll more than the limit with 429 and Retry-After, whatever the conversation', async () => {
    expect((await openStream('rs-a')).status).toBe(200);
    expect((await openStream('rs-b')).status).toBe(200);

    const third = await openStream('rs-c');
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await third.json()).toMatchObject({ refused: 'too_many_reads' });
    const refusedPoll = await poll('rs-c');
    expect(refusedPoll.status).toBe(429);
    expect(await refusedPoll.json()).toMatchObject({ refused: 'too_many_reads' });
    expect(channel.waitingReads()).toBeLessThanOrEqual(2);
  });

  it('frees the slot when a stream ends, and a finished long poll holds none', async () => {
    expect((await openStream('rs-a')).status).toBe(200);
    expect((await openStream('rs-b')).status).toBe(200);
    expect((await poll('rs-a')).status).toBe(429);

    opened.shift()!();
    await pollUntil(async () => (await poll('rs-a')).status === 200);
    for (let k = 0; k < 3; k++) expect((await poll('rs-a')).status).toBe(200);
    expect((await openStream('rs-c')).status).toBe(200);
    expect((await openStream('rs-d')).status).toBe(429);
  });
});

describe('reads per IPv6 client', () => {
  /** An event stream opened as the peer `address` would (the socket @hono/node-server passes as `env.incoming`). */
  async function streamFrom(address: string): Promise<Response> {
    const res = await channel.app.request('/api/chat/rs-v6/events', { headers: { accept: 'text/event-stream' } }, { incoming: { socket: { remoteAddress: address, remoteFamily: 'IPv6' } } });
    if (res.status === 200) opened.push(() => void res.body?.cancel());
    return res;
  }

  it('counts an IPv6 client by its /64: its other addresses cost it nothing', async () => {
    expect((await streamFrom('2001:db8:1:2::1')).status).toBe(200);
    expect((await streamFrom('2001:db8:1:2:ffff::2')).status).toBe(200);
    expect((await streamFrom('2001:0db8:0001:0002:abcd:1:2:3')).status).toBe(429);
    expect((await streamFrom('2001:db8:1:3::1')).status).toBe(200);
    expect((await streamFrom('::ffff:192.0.2.7')).status).toBe(200);
  });
});
