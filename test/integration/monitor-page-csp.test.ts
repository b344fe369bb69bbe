/**
 * The monitor's pages show what others wrote (user names, tool results fetched from the web, pinned
 * facts), and the monitor's origin can act (bull-board retries and removes jobs): their CSP lets
 * only the page's own inline script run, by its hash, never any other inline script, and no site
 * may frame them.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMonitorApp, MemorySessionView } from '../../src/monitor/index.js';
import type { UsageReader } from '../../src/usage/read-model.js';
import { serveApp, type ServedApp } from '../helpers/http.js';
import { seededSessions } from '../helpers/monitor-seed.js';

let served: ServedApp;

beforeAll(async () => {
  // The page routes never read the usage model: only `/api/usage*` do.
  const usage = { reader: {} as UsageReader };
  served = await serveApp(createMonitorApp({ sessions: new MemorySessionView(seededSessions()), usage }, { host: '127.0.0.1' }));
});

afterAll(() => served.close());

/** The directives of a Content-Security-Policy header, by name. */
function directives(csp: string): Map<string, string[]> {
  return new Map(csp.split(';').map((part) => part.trim().split(/\s+/)).filter((words) => words[0]).map(([name, ...values]) => [name!, values]));
}

describe('CSP of the monitor pages', () => {
  it.each(['/dashboard', '/overview'])('%s runs only its own inline script and cannot be framed', async (path) => {
    const res = await fetch(`${served.base}${path}`);
    expect(res.status).toBe(200);
    const csp = directives(res.headers.get('content-security-policy') ?? '');
    const html = await res.text();
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => match[1]!);
    expect(scripts).toHaveLength(1);
    const hash = `'sha256-${createHash('sha256').update(scripts[0]!).digest('base64')}'`;
    expect(csp.get('script-src')).toEqual([hash]);
    expect(csp.get('default-src')).toEqual(["'none'"]);
    expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
    expect(csp.get('base-uri')).toEqual(["'none'"]);
    expect(csp.get('form-action')).toEqual(["'none'"]);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
