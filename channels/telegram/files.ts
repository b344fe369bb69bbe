/**
 * Downloads a Telegram file: getFile, then `<apiRoot>/file/bot<token>/<file_path>`. That URL
 * holds the bot token, so it never appears in an error or a log line: errors name the file only.
 */
import type { Api } from 'grammy';
import { GrammyError } from 'grammy';
import type { Attachment } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';
import { CHANNEL_ERROR_CODES, type DownloadOptions } from '../channel.js';
import { fetchLimited, tooLarge } from '../download.js';
import { toTelegramChannelError } from './send.js';

/** Largest file the cloud Bot API lets a bot download (getFile answers "file is too big" above it). */
export const TELEGRAM_CLOUD_DOWNLOAD_LIMIT = 20 * 1024 * 1024;

/**
 * The bytes of `attachment` (its `ref` is a Telegram `file_id`), at most `options.maxBytes`.
 * @throws ChannelError `CHANNEL_FILE_TOO_LARGE` when the file is over the limit (ours, or the Bot
 * API's 20 MB, which getFile refuses); other `ChannelError`s as for every Bot API call.
 */
export async function downloadTelegramFile(api: Api, apiRoot: string, token: string, attachment: Attachment, options: DownloadOptions): Promise<Buffer> {
  const what = `telegram file ${attachment.fileName ?? attachment.kind}`;
  if (attachment.size !== undefined && attachment.size > options.maxBytes) throw tooLarge({ what, maxBytes: options.maxBytes }, attachment.size);
  let file: Awaited<ReturnType<Api['getFile']>>;
  try {
    file = await api.getFile(attachment.ref);
  } catch (err) {
    if (err instanceof GrammyError && err.error_code === 400 && /too big/i.test(err.description)) {
      throw new ChannelError(`download refused for ${what} (the Bot API serves files up to 20 MB: ${err.description})`, { retryable: false, code: CHANNEL_ERROR_CODES.fileTooLarge, cause: err });
    }
    throw toTelegramChannelError(err, 'getFile');
  }
  if (file.file_size !== undefined && file.file_size > options.maxBytes) throw tooLarge({ what, maxBytes: options.maxBytes }, file.file_size);
  if (!file.file_path) throw new ChannelError(`download failed for ${what} (getFile returned no file_path)`, { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
  // A local Bot API server in --local mode answers with a path on its own disk, not a URL path.
  if (file.file_path.startsWith('/')) throw new ChannelError(`download failed for ${what} (the Bot API server runs in --local mode and returned a disk path; run it without --local or share its files)`, { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
  const path = file.file_path.split('/').map(encodeURIComponent).join('/');
  return fetchLimited(`${apiRoot.replace(/\/+$/, '')}/file/bot${token}/${path}`, { ...options, what });
}
