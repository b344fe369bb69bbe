import { createServer } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import { GatewayError } from '../errors.js';
import { httpServerOptions, type HttpTimeouts } from '../monitor/index.js';

/** The advice of every "port in use" message. */
const PORT_ADVICE = 'set CHATGATE_HTTP_PORT to a free port (0: any free port)';

/**
 * Resolves when `host:port` can be listened on (port 0 always can).
 * @throws GatewayError `HTTP_PORT_IN_USE` (or `HTTP_LISTEN_FAILED`) saying which address and what to set.
 */
export async function ensurePortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => reject(listenError(host, port, err)));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/**
 * Serves `app` on `host:port`, cutting clients that trickle a request or idle past `timeouts`
 * (default `DEFAULT_HTTP_TIMEOUTS`). @throws GatewayError as {@link ensurePortFree}.
 */
export async function listen(app: Hono, host: string, port: number, timeouts?: HttpTimeouts): Promise<{ server: ServerType; httpUrl: string }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port, serverOptions: httpServerOptions(timeouts) }, (info) => {
      const shownHost = info.address.includes(':') ? `[${info.address}]` : info.address;
      resolve({ server, httpUrl: `http://${shownHost}:${info.port}` });
    });
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError(host, port, err)));
  });
}

/**
 * Closes the HTTP server. It runs after the channels stopped, so what is still open is a web chat
 * stream, a long poll or a dashboard request: those connections are closed rather than awaited.
 */
export function closeServer(server: ServerType): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    if ('closeAllConnections' in server) server.closeAllConnections();
  });
}

function listenError(host: string, port: number, err: NodeJS.ErrnoException): GatewayError {
  if (err.code === 'EADDRINUSE') return new GatewayError('HTTP_PORT_IN_USE', `port ${port} on ${host} is already in use (another chatgate or another program); ${PORT_ADVICE}`, { cause: err });
  return new GatewayError('HTTP_LISTEN_FAILED', `the HTTP server could not listen on ${host}:${port} (${err.code ?? err.message}); ${PORT_ADVICE} or CHATGATE_HTTP_HOST to an address of this machine`, { cause: err });
}
