/**
 * The `fetch` the openai SDK is given: one `node:http`/`node:https` request over a keep-alive
 * agent, its body handed to the SDK as the Node stream itself. Global fetch (undici) cost a
 * worker about a quarter of its CPU against a 0-ms model — Request and Headers validation, web
 * streams for the body both ways, several socket writes per request — for the same bytes. The
 * SDK reads an async-iterable body as it reads a web stream (`ReadableStreamToAsyncIterable`),
 * so streaming (SSE), abort and timeouts behave as before: the SDK's signal destroys the request
 * or the body, which then fails with an `AbortError` as fetch's does.
 */
import { request as httpRequest, Agent as HttpAgent, type IncomingMessage } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Readable } from 'node:stream';

/** Longest silence of a connection before the call fails: undici's `headersTimeout` and `bodyTimeout`. */
const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/** A `fetch` with the signature the SDK calls. */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Options of {@link createHttpFetch}. */
export interface HttpFetchOptions {
  /**
   * Longest silence of the socket in ms, waiting for the headers or between body chunks, before the
   * call fails with an `ETIMEDOUT` error: the SDK's own timeout stops at the headers, so without this a
   * body that stalls would hang its turn for ever. Default 300 000 (fetch's).
   */
  idleTimeoutMs?: number;
}

/** Redirects that keep the method and body (fetch follows them for a POST too); at most this many hops. */
const KEEPING_REDIRECTS = new Set([307, 308]);
const MAX_REDIRECTS = 5;

/**
 * Creates the fetch: string, byte or absent bodies go over `node:http(s)` with one keep-alive
 * agent per protocol; anything else (a `Request`, form data, a stream: uploads) goes to global
 * fetch. A 307 or 308 (an endpoint behind a proxy that moved it) is followed as fetch follows it,
 * up to 5 hops, without the `authorization` header once it leaves the origin; other 3xx answers
 * are given back as they came (a POST turned into a GET would not be the call asked for).
 */
export function createHttpFetch(options: HttpFetchOptions = {}): FetchFunction {
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const agents = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };
  const handles = (url: URL | null, body: unknown): url is URL =>
    url !== null && url.protocol in agents && (body === undefined || typeof body === 'string' || body instanceof Uint8Array);
  return async (input, init = {}) => {
    const body = init.body ?? undefined;
    let url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : null;
    if (!handles(url, body)) return fetch(input, init);
    let hopInit = init;
    for (let hops = 0; ; hops++) {
      const response = await send(url, hopInit, body as string | Uint8Array | undefined, agents[url.protocol as keyof typeof agents], idleTimeoutMs);
      const location = response.headers.get('location');
      if (!KEEPING_REDIRECTS.has(response.status) || location === null || hops >= MAX_REDIRECTS) return response;
      const next: URL = new URL(location, url);
      if (!handles(next, body)) return response;
      await response.arrayBuffer().catch(() => undefined);
      if (next.origin !== url.origin) hopInit = { ...hopInit, headers: withoutAuthorization(hopInit.headers) };
      url = next;
    }
  };
}

/** `headers` without `authorization`: credentials for one origin are not sent to another (fetch's rule). */
function withoutAuthorization(headers: HeadersInit | undefined): Headers {
  const copy = new Headers(headers);
  copy.delete('authorization');
  return copy;
}

function send(url: URL, init: RequestInit, body: string | Uint8Array | undefined, agent: HttpAgent, idleTimeoutMs: number): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const headers = requestHeaders(init.headers, body);
  const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method: init.method ?? 'GET', headers, agent });
  return new Promise<Response>((resolve, reject) => {
    let response: IncomingMessage | undefined;
    // Before the headers the request fails; after them the body does (its reader sees the AbortError).
    const onAbort = (): void => {
      const reason = abortReason(signal!) as Error;
      if (response) return void response.destroy(reason);
      request.destroy(reason);
      reject(reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    request.setTimeout(idleTimeoutMs, () => {
      const err = Object.assign(new Error(`${url.host} sent nothing for ${idleTimeoutMs} ms`), { code: 'ETIMEDOUT' });
      // The response's reader must see the error: destroying the request alone would dump the body as if it had ended.
      if (response) response.destroy(err);
      request.destroy(err);
    });
    request.on('error', (err) => {
      if (response) return;
      signal?.removeEventListener('abort', onAbort);
      reject(signal?.aborted ? abortReason(signal) : new TypeError('fetch failed', { cause: err }));
    });
    request.once('response', (res) => {
      response = res;
      // The body's reader sees its errors; with no reader yet, an error must not crash the process.
      res.on('error', () => undefined);
      res.once('close', () => signal?.removeEventListener('abort', onAbort));
      try {
        resolve(new NodeResponse(res, url.href, signal));
      } catch (err) {
        res.destroy();
        reject(new TypeError('fetch failed', { cause: err }));
      }
    });
    request.end(body);
  });
}

/** The SDK's headers (a `Headers`, pairs or a record) as a plain record, with the body's length. */
function requestHeaders(init: HeadersInit | undefined, body: string | Uint8Array | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  (init instanceof Headers ? init : new Headers(init)).forEach((value, name) => {
    out[name] = value;
  });
  if (body !== undefined && out['content-length'] === undefined) out['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  return out;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * A `Response` whose status and headers are the real ones and whose body is the Node stream
 * (decompressed when the server compressed it anyway): `body` is what the SDK iterates for SSE,
 * `text()`/`json()`/`arrayBuffer()` read it whole.
 */
class NodeResponse extends Response {
  readonly #body: Readable;
  readonly #url: string;
  #used = false;

  constructor(res: IncomingMessage, url: string, signal: AbortSignal | undefined) {
    super(null, { status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers: pairsOf(res.rawHeaders) });
    this.#body = decoded(res);
    this.#url = url;
    if (this.#body !== res) {
      this.#body.on('error', () => undefined);
      res.once('error', (err) => this.#body.destroy(signal?.aborted ? (abortReason(signal) as Error) : err));
    }
  }

  override get body(): Response['body'] {
    // The SDK accepts any async iterable here (src/internal/shims.ts, ReadableStreamToAsyncIterable).
    return this.#body as unknown as Response['body'];
  }

  override get bodyUsed(): boolean {
    return this.#used;
  }

  override get url(): string {
    return this.#url;
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.#read();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  override async text(): Promise<string> {
    return (await this.#read()).toString('utf8');
  }

  override async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  async #read(): Promise<Buffer> {
    if (this.#used) throw new TypeError('Body is unusable: Body has already been read');
    this.#used = true;
    const parts: Buffer[] = [];
    for await (const part of this.#body) parts.push(part as Buffer);
    return Buffer.concat(parts);
  }
}

function pairsOf(raw: string[]): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (let k = 0; k + 1 < raw.length; k += 2) pairs.push([raw[k]!, raw[k + 1]!]);
  return pairs;
}

/** The body as the server meant it: fetch decompresses gzip, deflate and br transparently, so this does too. */
function decoded(res: IncomingMessage): Readable {
  const encoding = (res.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder = encoding === 'gzip' || encoding === 'x-gzip' ? createGunzip() : encoding === 'deflate' ? createInflate() : encoding === 'br' ? createBrotliDecompress() : null;
  return decoder ? res.pipe(decoder) : res;
}
