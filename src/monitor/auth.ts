import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { isLoopbackHost } from '../config.js';

/** Cookie that carries the monitor token for browser pages (dashboard, bull-board). */
export const MONITOR_COOKIE = 'cg_monitor';

/** Options of {@link createMonitorAuth}. */
export interface MonitorAuthOptions {
  /** Address the server is bound to. Off loopback, every request needs the token. */
  host: string;
  /** The bearer token. When set, it is required even on loopback. */
  token?: string;
}

/**
 * Bearer-token middleware of the monitor. Open on loopback without a token; otherwise requires
 * `Authorization: Bearer <token>`, the {@link MONITOR_COOKIE} cookie, or `?token=<token>` (which
 * sets the cookie, so a browser can open the dashboard and bull-board). Anything else: 401.
 * Bound off loopback without a token configured, every request is refused (fail closed).
 */
export function createMonitorAuth(options: MonitorAuthOptions): MiddlewareHandler {
  const open = isLoopbackHost(options.host) && !options.token;
  const expected = options.token ? digest(options.token) : undefined;
  return async (c, next) => {
    if (open) return next();
    const header = c.req.header('authorization');
    const bearer = header?.match(/^Bearer\s+(\S+)$/i)?.[1];
    const query = c.req.query('token');
    const presented = bearer ?? getCookie(c, MONITOR_COOKIE) ?? query;
    if (!expected || presented === undefined || !timingSafeEqual(digest(presented), expected)) {
      c.header('WWW-Authenticate', 'Bearer realm="chatgate monitor"');
      return c.json({ error: 'unauthorized: send Authorization: Bearer <CHATGATE_MONITOR_TOKEN>' }, 401);
    }
    if (query !== undefined && presented === query) {
      setCookie(c, MONITOR_COOKIE, query, { httpOnly: true, sameSite: 'Strict', path: '/' });
    }
    return next();
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
