/**
 * Downloads one file over HTTP with a byte limit, for the adapters' `downloadAttachment`: refused
 * before reading when the server announces a longer body, aborted as soon as more bytes arrive.
 */
import { ChannelError } from '../src/errors.js';
import { CHANNEL_ERROR_CODES, toChannelError, type DownloadOptions } from './channel.js';

/** Longest a download may take, ms. */
export const DOWNLOAD_TIMEOUT_MS = 60_000;

/** Options of {@link fetchLimited}. */
export interface FetchLimitedOptions extends DownloadOptions {
  /** What is downloaded, for messages (never a URL holding a token), e.g. `telegram file voice.ogg`. */
  what: string;
  /** Timeout of the whole download, ms. Default {@link DOWNLOAD_TIMEOUT_MS}. */
  timeoutMs?: number;
  /**
   * When set, the URL and every redirect it leads to must be one of these origins or https hosts
   * (see {@link isAllowedUrl}); anything else is refused without a request. Unset: any URL.
   */
  allowedHosts?: AllowedHosts;
}

/** Where a download may go: exact origins (`http://127.0.0.1:4000`) and https hosts (`cdn.discordapp.com`). */
export interface AllowedHosts {
  origins: readonly string[];
  httpsHosts: readonly string[];
}

/** Most redirects followed when {@link FetchLimitedOptions.allowedHosts} is set. */
const MAX_REDIRECTS = 3;

/** True when `url` is one of `allowed`'s origins, or https on one of its hosts (default port). */
export function isAllowedUrl(url: string, allowed: AllowedHosts): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (allowed.origins.includes(parsed.origin)) return true;
  return parsed.protocol === 'https:' && parsed.port === '' && allowed.httpsHosts.includes(parsed.hostname.toLowerCase());
}

/**
 * GETs `url` and returns its body, at most `maxBytes` of it.
 * @throws ChannelError `CHANNEL_FILE_TOO_LARGE` over the limit; `CHANNEL_TRANSIENT` on network
 * failures, timeouts, 429 and 5xx; `CHANNEL_PERMANENT` on other HTTP errors.
 */
export async function fetchLimited(url: string, options: FetchLimitedOptions): Promise<Buffer> {
  const timeout = AbortSignal.timeout(options.timeoutMs ?? DOWNLOAD_TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const response = await fetchFollowing(url, options, signal);
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    throw toChannelError(`download failed for ${options.what} (HTTP ${response.status})`, { status: response.status }, undefined);
  }
  const announced = Number(response.headers.get('content-length') ?? NaN);
  if (Number.isFinite(announced) && announced > options.maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(options, announced);
  }
  return readLimited(response, options);
}

/** GETs `url`, following redirects itself when hosts are restricted (each hop checked before it is asked). */
async function fetchFollowing(url: string, options: FetchLimitedOptions, signal: AbortSignal): Promise<Response> {
  const allowed = options.allowedHosts;
  let next = url;
  for (let hop = 0; ; hop++) {
    if (allowed && !isAllowedUrl(next, allowed)) {
      throw new ChannelError(`download refused for ${options.what} (${hop === 0 ? 'its address' : 'a redirect'} leads outside ${[...allowed.httpsHosts, ...allowed.origins].join(', ')})`, { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
    }
    let response: Response;
    try {
      response = await fetch(next, { signal, redirect: allowed ? 'manual' : 'follow' });
    } catch (err) {
      throw toChannelError(`download failed for ${options.what} (${describe(err)})`, { network: true }, err);
    }
    const location = response.headers.get('location');
    if (!allowed || response.status < 300 || response.status >= 400 || location === null) return response;
    await response.body?.cancel().catch(() => undefined);
    if (hop >= MAX_REDIRECTS) throw new ChannelError(`download failed for ${options.what} (more than ${MAX_REDIRECTS} redirects)`, { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
    next = new URL(location, next).toString();
  }
}

/** A `CHANNEL_FILE_TOO_LARGE` error; `size` when known. */
export function tooLarge(options: { what: string; maxBytes: number }, size?: number): ChannelError {
  const detail = size === undefined ? `over ${options.maxBytes} bytes` : `${size} bytes, limit ${options.maxBytes}`;
  return new ChannelError(`download refused for ${options.what} (${detail})`, { retryable: false, code: CHANNEL_ERROR_CODES.fileTooLarge });
}

async function readLimited(response: Response, options: FetchLimitedOptions): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = response.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > options.maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge(options);
      }
      chunks.push(Buffer.from(value));
    }
  } catch (err) {
    if (err instanceof ChannelError) throw err;
    throw toChannelError(`download failed for ${options.what} (${describe(err)})`, { network: true }, err);
  }
  return Buffer.concat(chunks, total);
}

function describe(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return 'timed out';
  if (err instanceof Error && err.name === 'AbortError') return 'aborted';
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err instanceof Error ? err.message : String(err)}${cause}`;
}
