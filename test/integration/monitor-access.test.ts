/**
 * The access guard of the HTTP server: `?token=` only as a one-time browser login, loopback Host
 * names only while open (DNS rebinding), and the same guard in front of the web chat.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createWebChannel } from '../../channels/web/index.js';
import { createAccessGuard, createMonitorApp, isLoopbackRequestHost, MemorySessionView } from '../../src/monitor/index.js';
import { seededSessions } from '../helpers/monitor-seed.js';

const TOKEN = 'access-token-0123456789';
const reader = new MemorySessionView(seededSessions());

/** `app.request` with an explicit Host header (what a browser sends for the name it resolved). */
function request(app: Hono, path: string, init: RequestInit & { host?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set('host', init.host ?? '127.0.0.1:8787');
  return Promise.resolve(app.request(`http://${init.host ?? '127.0.0.1:8787'}${path}`, { ...init, headers }));
}

const cookieOf = (res: Response): string => (res.headers.get('set-cookie') ?? '').split(';')[0];

describe('?token= is a one-time login', () => {
  const app = createMonitorApp({ sessions: reader }, { host: '0.0.0.0', monitorToken: TOKEN });

  it('answers 303 to the same URL without the token, setting an HttpOnly SameSite=Strict cookie', async () => {
    const res = await request(app, `/dashboard?token=${TOKEN}&x=1`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard?x=1');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const cookie = res.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^cg_monitor=/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).not.toMatch(/; Secure/);
    expect((await request(app, '/dashboard?x=1', { headers: { cookie: cookieOf(res) } })).status).toBe(200);
  });

  it('marks the cookie Secure behind an https proxy', async () => {
    const res = await request(app, `/dashboard?token=${TOKEN}`, { headers: { 'x-forwarded-proto': 'https' } });
    expect(res.status).toBe(303);
    expect(res.headers.get('set-cookie')).toMatch(/; Secure/);
  });

  it('never authorises the request that carries it: API calls get a redirect, not data', async () => {
    const api = await request(app, `/api/sessions?token=${TOKEN}`);
    expect(api.status).toBe(303);
    expect(await api.text()).not.toContain('telegram:1001');
    const metrics = await request(app, `/metrics?token=${TOKEN}`);
    expect(metrics.status).toBe(303);
    expect(await metrics.text()).not.toContain('chatgate_');
  });

  it('is refused on other methods, and a wrong token sets no cookie', async () => {
    const post = await request(app, `/api/sessions?token=${TOKEN}`, { method: 'POST' });
    expect(post.status).toBe(401);
    const wrong = await request(app, '/dashboard?token=wrong-token-0123456789');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
  });
});

describe('open on loopback without a token: loopback Host names only (DNS rebinding)', () => {
  const app = createMonitorApp({ sessions: reader }, { host: '127.0.0.1' });

  it.each(['127.0.0.1:8787', 'localhost:8787', 'localhost', '[::1]:8787', 'LOCALHOST:1'])('accepts Host %s', async (host) => {
    expect((await request(app, '/api/sessions', { host })).status).toBe(200);
  });

  it.each(['evil.example:8787', 'evil.example', 'localhost.evil.example', '127.0.0.1.nip.io:8787', '[::2]:8787'])('refuses Host %s with 403 and a clear message', async (host) => {
    for (const path of ['/api/sessions', '/metrics', '/dashboard']) {
      const res = await request(app, path, { host });
      expect(res.status, path).toBe(403);
      expect(((await res.json()) as { error: string }).error).toMatch(/not a loopback name.*CHATGATE_MONITOR_TOKEN/);
    }
    expect((await request(app, '/healthz', { host })).status).toBe(200);
  });

  // Apache's ProxyPass (and nginx's proxy_pass) send the upstream's own name, `127.0.0.1:8787`, as Host:
  // only the forwarding headers tell a request from the internet from one of this machine's browser.
  it.each<Record<string, string>>([{ 'x-forwarded-for': '203.0.113.9' }, { forwarded: 'for=203.0.113.9;proto=https' }, { 'x-real-ip': '203.0.113.9' }, { 'x-forwarded-host': 'monitor.example' }])(
    'refuses a request that came through a reverse proxy under a loopback Host (%o)', async (headers) => {
      for (const path of ['/api/sessions', '/metrics', '/dashboard']) {
        const res = await request(app, path, { headers });
        expect(res.status, path).toBe(403);
        expect(((await res.json()) as { error: string }).error).toMatch(/reverse proxy.*CHATGATE_MONITOR_TOKEN/);
      }
      expect((await request(app, '/healthz', { headers })).status).toBe(200);
    },
  );

  it('with a token configured, requires it on loopback under any Host', async () => {
    const guarded = createMonitorApp({ sessions: reader }, { host: '127.0.0.1', monitorToken: TOKEN });
    expect((await request(guarded, '/api/sessions')).status).toBe(401);
    expect((await request(guarded, '/api/sessions', { host: 'monitor.example', headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });

  it('refuses writes that a browser says come from another site (CSRF), but not same-origin pages or tools', async () => {
    const board = createMonitorApp({ sessions: reader }, { host: '127.0.0.1' });
    const write = (headers: Record<string, string>) => request(board, '/api/sessions', { method: 'POST', headers: { 'content-type': 'text/plain', ...headers }, body: '{}' });
    const crossSite: Array<Record<string, string>> = [{ 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { origin: 'https://evil.example' }, { origin: 'null' }];
    for (const headers of crossSite) {
      const res = await write(headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(((await res.json()) as { error: string }).error).toMatch(/cross-site request refused/);
    }
    // Same-origin pages and non-browser tools get past the guard (to the route's own answer).
    const allowed: Array<Record<string, string>> = [{ 'sec-fetch-site': 'same-origin' }, { origin: 'http://127.0.0.1:8787' }, {}];
    for (const headers of allowed) {
      expect((await write(headers)).status, JSON.stringify(headers)).not.toBe(403);
    }
  });

  it('parses Host headers', () => {
    expect(isLoopbackRequestHost('127.0.0.1')).toBe(true);
    expect(isLoopbackRequestHost('[::1]')).toBe(true);
    expect(isLoopbackRequestHost('::1')).toBe(false);
    expect(isLoopbackRequestHost('localhost:80:80')).toBe(false);
    expect(isLoopbackRequestHost('')).toBe(false);
  });
});

describe('web chat behind the access guard', () => {
  function webApp(host: string, monitorToken?: string): Hono {
    const web = createWebChannel({ guard: createAccessGuard({ host, monitorToken, tokenOnLoopback: false }) });
    void web.start(async () => undefined);
    const app = new Hono();
    app.route('/', web.app);
    return app;
  }
  const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hi' }) };

  it('bound off loopback, needs the token for the page, the API and SSE; the login cookie covers them all', async () => {
    const app = webApp('0.0.0.0', TOKEN);
    expect((await request(app, '/chat')).status).toBe(401);
    expect((await request(app, '/api/chat/c1/messages', post)).status).toBe(401);
    expect((await request(app, '/api/chat/c1/messages?after=0&timeoutMs=0')).status).toBe(401);
    expect((await request(app, '/api/chat/c1/events')).status).toBe(401);

    const login = await request(app, `/chat?c=c1&token=${TOKEN}`);
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/chat?c=c1');
    const cookie = cookieOf(login);
    expect((await request(app, '/chat?c=c1', { headers: { cookie } })).status).toBe(200);
    expect((await request(app, '/api/chat/c1/messages', { ...post, headers: { ...post.headers, cookie } })).status).toBe(202);
    expect((await request(app, '/api/chat/c1/messages?after=0&timeoutMs=0', { headers: { cookie } })).status).toBe(200);
    const events = await request(app, '/api/chat/c1/events', { headers: { cookie } });
    expect(events.status).toBe(200);
    expect(events.headers.get('content-type')).toContain('text/event-stream');
    await events.body?.cancel();
    expect((await request(app, '/api/chat/c1/messages', { ...post, headers: { ...post.headers, authorization: `Bearer ${TOKEN}` } })).status).toBe(202);
  });

  it('bound off loopback without a token configured, refuses everything', async () => {
    expect((await request(webApp('0.0.0.0'), '/chat')).status).toBe(401);
  });

  it('bound to loopback, stays open for loopback Host names (even with a token set) and refuses others', async () => {
    for (const token of [undefined, TOKEN]) {
      const app = webApp('127.0.0.1', token);
      expect((await request(app, '/chat', { host: 'localhost:8787' })).status).toBe(200);
      expect((await request(app, '/api/chat/c1/messages', post)).status).toBe(202);
      expect((await request(app, '/chat', { host: 'rebound.example:8787' })).status).toBe(token ? 401 : 403);
      const crossSite = await request(app, '/api/chat/c1/messages', { ...post, headers: { ...post.headers, 'sec-fetch-site': 'cross-site' } });
      expect(crossSite.status).toBe(403);
    }
  });

  it('bound to loopback behind a reverse proxy, needs the token even under a loopback Host', async () => {
    const proxied = { 'x-forwarded-for': '203.0.113.9' };
    expect((await request(webApp('127.0.0.1'), '/chat', { headers: proxied })).status).toBe(403);
    const app = webApp('127.0.0.1', TOKEN);
    expect((await request(app, '/chat', { headers: proxied })).status).toBe(401);
    expect((await request(app, '/api/chat/c1/messages', { ...post, headers: { ...post.headers, ...proxied } })).status).toBe(401);
    expect((await request(app, '/api/chat/c1/messages', { ...post, headers: { ...post.headers, ...proxied, authorization: `Bearer ${TOKEN}` } })).status).toBe(202);
    const login = await request(app, `/chat?token=${TOKEN}`, { headers: proxied });
    expect(login.status).toBe(303);
    expect((await request(app, '/chat', { headers: { ...proxied, cookie: cookieOf(login) } })).status).toBe(200);
  });
});
