import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';

/** A Hono app served on a free port: its base URL (`http://127.0.0.1:<port>`) and how to stop it. */
export interface ServedApp {
  base: string;
  /** Closes the server and its open connections (event streams included). */
  close(): Promise<void>;
}

/** Serves `app` on port 0 of `hostname` (default loopback), e.g. a monitor app for a browser test. */
export async function serveApp(app: { fetch: (request: Request) => Response | Promise<Response> }, hostname = '127.0.0.1'): Promise<ServedApp> {
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname }, () => resolve(s));
  });
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      (server as Server).closeAllConnections();
      await closed;
    },
  };
}
