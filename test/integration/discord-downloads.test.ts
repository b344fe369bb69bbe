/**
 * Discord attachment downloads go only to Discord's CDN (or the configured API root's origin):
 * a reference naming another address, or a redirect leading to one, is refused without a request
 * there. Two local HTTP servers: the API root (serves files, redirects) and an "internal" one.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDiscordChannel, type DiscordChannel } from '../../channels/discord/index.js';
import { isAllowedUrl } from '../../channels/download.js';
import { discordDownloadHosts } from '../../channels/discord/files.js';
import type { Attachment } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';

let api: Server;
let internal: Server;
let apiOrigin = '';
let internalOrigin = '';
const internalHits: string[] = [];

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

beforeAll(async () => {
  internal = createServer((req, res) => {
    internalHits.push(req.url ?? '');
    res.end('secret');
  });
  internalOrigin = await listen(internal);
  api = createServer((req, res) => {
    if (req.url === '/attachments/1/2/a.txt') return void res.end('hello file');
    if (req.url === '/attachments/1/2/moved.txt') return void res.writeHead(302, { location: '/attachments/1/2/a.txt' }).end();
    if (req.url === '/attachments/1/2/away.txt') return void res.writeHead(302, { location: `${internalOrigin}/admin` }).end();
    res.writeHead(404).end();
  });
  apiOrigin = await listen(api);
});

afterAll(async () => {
  await new Promise((resolve) => api.close(resolve));
  await new Promise((resolve) => internal.close(resolve));
});

function channel(): DiscordChannel {
  return createDiscordChannel({}, { token: 'test-token', apiRoot: `${apiOrigin}/api` });
}

function attachment(ref: string): Attachment {
  return { kind: 'document', ref, fileName: 'a.txt', mimeType: 'text/plain' };
}

async function refusal(ref: string): Promise<ChannelError> {
  const err = await channel().downloadAttachment!(attachment(ref), { maxBytes: 1_000 }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ChannelError);
  return err as ChannelError;
}

describe('discord attachment downloads', () => {
  it('fetch from the API root origin, following a redirect that stays there', async () => {
    expect((await channel().downloadAttachment!(attachment(`${apiOrigin}/attachments/1/2/a.txt`), { maxBytes: 1_000 })).toString()).toBe('hello file');
    expect((await channel().downloadAttachment!(attachment(`${apiOrigin}/attachments/1/2/moved.txt`), { maxBytes: 1_000 })).toString()).toBe('hello file');
  });

  it('refuse an address outside Discord, and a redirect leading outside, without asking there', async () => {
    const direct = await refusal(`${internalOrigin}/admin`);
    expect(direct.code).toBe('CHANNEL_PERMANENT');
    expect(direct.retryable).toBe(false);
    expect(direct.message).toMatch(/download refused for discord attachment a\.txt \(its address leads outside cdn\.discordapp\.com/);
    const redirected = await refusal(`${apiOrigin}/attachments/1/2/away.txt`);
    expect(redirected.message).toContain('a redirect leads outside');
    for (const ref of ['file:///etc/passwd', 'not a url', `http://cdn.discordapp.com/attachments/1/2/a.txt`, 'https://cdn.discordapp.com:8443/x', 'https://cdn.discordapp.com.evil.example/x']) {
      expect((await refusal(ref)).code, ref).toBe('CHANNEL_PERMANENT');
    }
    expect(internalHits).toEqual([]);
  });

  it('allow exactly the CDN hosts over https and the API root origin', () => {
    const hosts = discordDownloadHosts('https://discord.com/api');
    expect(isAllowedUrl('https://cdn.discordapp.com/attachments/1/2/x.png?ex=1', hosts)).toBe(true);
    expect(isAllowedUrl('https://MEDIA.discordapp.net/attachments/1/2/x.png', hosts)).toBe(true);
    expect(isAllowedUrl('https://discord.com/attachments/1/2/x.png', hosts)).toBe(true);
    expect(isAllowedUrl('https://user@evil.example/cdn.discordapp.com', hosts)).toBe(false);
    expect(isAllowedUrl('http://discord.com/x', hosts)).toBe(false);
  });
});
