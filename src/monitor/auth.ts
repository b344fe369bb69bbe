import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { isLoopbackHost } from './hosts.js';
import { hasJsonOrNoBody, isCrossSiteWrite, type RequestHeadersLike } from './request-origin.js';

/** Cookie that carries the monitor token for browser pages (dashboard, bull-board, web chat). */
export const MONITOR_COOKIE = 'cg_monitor';

/** Options of {@link createAccessGuard}. */
export interface AccessGuardOptions {
  /** Address the HTTP server is bound to (`CHATGATE_HTTP_HOST`). Off loopback, every request needs the token. */
  host: string;
  /** `CHATGATE_MONITOR_TOKEN`. Without it, a server bound off loopback refuses everything (fail closed). */
  monitorToken?: string;
  /**
   * On a loopback-bound server with a token configured: require the token (`true`, the monitor)
   * or let loopback Host names in without it (`false`, the web chat; other Host names still need it).
   * Default `true`.
   */
  tokenOnLoopback?: boolean;
  /** Realm named in `WWW-Authenticate`. Default `chatgate monitor`. */
  realm?: string;
  /**
   * Writes may also carry `multipart/form-data` (the web chat's file uploads); the cross-site
   * check (`Origin`, `Sec-Fetch-Site`) still refuses them from another site. Default `false`.
   */
  multipartWrites?: boolean;
}

/** Options of {@link createMonitorAuth}. */
export interface MonitorAuthOptions {
  /** Address the server is bound to. Off loopback, every request needs the token. */
  host: string;
  /** The bearer token. When set, it is required even on loopback. */
  token?: string;
}

/**
 * Access guard of the HTTP server's private routes (the monitor, the web chat off loopback).
 *
 * - **Writes, in every mode**: a state-changing request (not GET, HEAD or OPTIONS) that a browser
 *   says comes from another origin (`Sec-Fetch-Site` other than `same-origin`/`none`, or an
 *   `Origin` that is not this Host) gets 403; one with a body that is not `application/json` gets
 *   415 (`text/plain`, forms and multipart are what a cross-site page can send without a preflight;
 *   `multipartWrites` lets multipart through for the web chat's uploads).
 *
 * - **Open** (bound to loopback, and no token configured or `tokenOnLoopback: false`): only
 *   requests whose `Host` is a loopback name (`localhost`, `127.0.0.1`, `[::1]`, any port) pass;
 *   others get 403 — a DNS-rebinding page cannot reach the server under its own name. A request
 *   with a forwarding header (`Forwarded`, `X-Forwarded-For`, `X-Forwarded-Host`, `X-Real-IP`) came
 *   through a reverse proxy, which may send its upstream's name (`127.0.0.1:8787`) as `Host`: it is
 *   not open, and needs the token (403 without one configured).
 * - **Token** otherwise: `Authorization: Bearer <token>` or the {@link MONITOR_COOKIE} cookie, else 401.
 *   `?token=<token>` is only a browser login: a GET with it is answered 303 to the same URL
 *   without the token, setting the cookie (HttpOnly, SameSite=Strict, Secure over https or
 *   `X-Forwarded-Proto: https`); it never authorises the request that carries it.
 */
export function createAccessGuard(options: AccessGuardOptions): MiddlewareHandler {
  const loopbackBound = isLoopbackHost(options.host);
  const token = options.monitorToken;
  const open = loopbackBound && (!token || options.tokenOnLoopback === false);
  const expected = token ? digest(token) : undefined;
  const realm = options.realm ?? 'chatgate monitor';
  const matches = (presented: string | undefined): boolean =>
    expected !== undefined && presented !== undefined && timingSafeEqual(digest(presented), expected);

  return async (c, next) => {
    // In every mode (a cookie rides along with a forged request as well): a page on another site must
    // not be able to write. The browser says where a request comes from (Sec-Fetch-Site, Origin);
    // tools like curl send neither, and a cross-site page can send a body only as a "simple" type.
    const request = requestHeadersOf(c);
    if (isCrossSiteWrite(request)) return forbiddenCrossSite(c);
    if (!hasJsonOrNoBody(request) && !(options.multipartWrites === true && isMultipartType(request.contentType))) return unsupportedWriteType(c);
    if (open && isLoopbackRequest(c) && !isProxied(c)) return next();
    if (open && !token) return isLoopbackRequest(c) ? forbiddenProxied(c) : forbiddenHost(c);
    const login = c.req.query('token');
    if (login !== undefined) {
      if ((c.req.method === 'GET' || c.req.method === 'HEAD') && matches(login)) return loginRedirect(c, login);
      return unauthorized(c, realm, '`?token=` is only a browser login for pages; send Authorization: Bearer <CHATGATE_MONITOR_TOKEN>');
    }
    const bearer = c.req.header('authorization')?.match(/^Bearer\s+(\S+)$/i)?.[1];
    if (!matches(bearer ?? getCookie(c, MONITOR_COOKIE))) {
      return unauthorized(c, realm, 'send Authorization: Bearer <CHATGATE_MONITOR_TOKEN>, or open the page once with ?token=<CHATGATE_MONITOR_TOKEN>');
    }
    return next();
  };
}

/** The monitor's guard: {@link createAccessGuard} with the token required on loopback too when set. */
export function createMonitorAuth(options: MonitorAuthOptions): MiddlewareHandler {
  return createAccessGuard({ host: options.host, monitorToken: options.token });
}

/** True when the `Host` the client asked for is a loopback name or address (any port). */
export function isLoopbackRequestHost(hostHeader: string): boolean {
  const match = hostHeader.trim().match(/^\[([^\]]+)\](?::\d*)?$/) ?? hostHeader.trim().match(/^([^:[\]]+)(?::\d*)?$/);
  return match?.[1] !== undefined && isLoopbackHost(match[1]);
}

function isLoopbackRequest(c: Context): boolean {
  return isLoopbackRequestHost(c.req.header('host') ?? new URL(c.req.url).host);
}

/** The headers the origin and content-type checks read. */
export function requestHeadersOf(c: Context): RequestHeadersLike {
  return {
    method: c.req.method, host: c.req.header('host') ?? new URL(c.req.url).host, origin: c.req.header('origin'), secFetchSite: c.req.header('sec-fetch-site'),
    contentType: c.req.header('content-type'), contentLength: c.req.header('content-length'), transferEncoding: c.req.header('transfer-encoding'),
  };
}

/** Headers a reverse proxy adds (Apache's ProxyPass by default; nginx and Caddy as usually configured). */
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-real-ip'] as const;

/** True when a reverse proxy says it forwarded the request: whatever its Host, it may come from anywhere. */
function isProxied(c: Context): boolean {
  return FORWARDING_HEADERS.some((name) => c.req.header(name) !== undefined);
}

function isMultipartType(contentType: string | undefined): boolean {
  return /^multipart\/form-data\s*;/i.test(contentType?.trim() ?? '');
}

function unsupportedWriteType(c: Context): Response {
  return c.json({ error: 'unsupported content type: send a state-changing request as `Content-Type: application/json` (or without a body)' }, 415);
}

function forbiddenCrossSite(c: Context): Response {
  return c.json({ error: 'forbidden: a page on another site may not change anything here (cross-site request refused)' }, 403);
}

function forbiddenHost(c: Context): Response {
  const host = (c.req.header('host') ?? new URL(c.req.url).host).slice(0, 100);
  return c.json({
    error: `forbidden: Host ${JSON.stringify(host)} is not a loopback name. Without CHATGATE_MONITOR_TOKEN this server answers only ` +
      'to localhost, 127.0.0.1 and [::1]; set CHATGATE_MONITOR_TOKEN to reach it under another name.',
  }, 403);
}

function forbiddenProxied(c: Context): Response {
  return c.json({
    error: 'forbidden: this request came through a reverse proxy (it carries Forwarded, X-Forwarded-For, X-Forwarded-Host or X-Real-IP), ' +
      'so it may come from anywhere. Without CHATGATE_MONITOR_TOKEN this server answers only to this machine; set CHATGATE_MONITOR_TOKEN to reach it through a proxy.',
  }, 403);
}

function unauthorized(c: Context, realm: string, hint: string): Response {
  c.header('WWW-Authenticate', `Bearer realm="${realm}"`);
  return c.json({ error: `unauthorized: ${hint}` }, 401);
}

/** 303 to the same URL without `token`, setting the cookie; the token never stays in the address bar. */
function loginRedirect(c: Context, token: string): Response {
  const url = new URL(c.req.url);
  url.searchParams.delete('token');
  const secure = url.protocol === 'https:' || c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() === 'https';
  setCookie(c, MONITOR_COOKIE, token, { httpOnly: true, sameSite: 'Strict', path: '/', secure });
  c.header('Cache-Control', 'no-store');
  c.header('Referrer-Policy', 'no-referrer');
  return c.redirect(`${url.pathname}${url.search}`, 303);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
