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
}

/**
 * GETs `url` and returns its body, at most `maxBytes` of it.
 * @throws ChannelError `CHANNEL_FILE_TOO_LARGE` over the limit; `CHANNEL_TRANSIENT` on network
 * failures, timeouts, 429 and 5xx; `CHANNEL_PERMANENT` on other HTTP errors.
 */
export async function fetchLimited(url: string, options: FetchLimitedOptions): Promise<Buffer> {
  const timeout = AbortSignal.timeout(options.timeoutMs ?? DOWNLOAD_TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let response: Response;
  try {
    response = await fetch(url, { signal, redirect: 'follow' });
  } catch (err) {
    throw toChannelError(`download failed for ${options.what} (${describe(err)})`, { network: true }, err);
  }
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
