/**
 * Downloads a Discord attachment from its CDN URL (signed by Discord, no bot token needed), within
 * the byte limit; the size Discord reported is checked first.
 */
import type { Attachment } from '../../src/core/inbound.js';
import type { DownloadOptions } from '../channel.js';
import { fetchLimited, tooLarge } from '../download.js';

/**
 * The bytes of `attachment` (its `ref` is the attachment's URL), at most `options.maxBytes`.
 * @throws ChannelError `CHANNEL_FILE_TOO_LARGE` over the limit, else as {@link fetchLimited}.
 */
export async function downloadDiscordAttachment(attachment: Attachment, options: DownloadOptions): Promise<Buffer> {
  const what = `discord attachment ${attachment.fileName ?? attachment.kind}`;
  if (attachment.size !== undefined && attachment.size > options.maxBytes) throw tooLarge({ what, maxBytes: options.maxBytes }, attachment.size);
  return fetchLimited(attachment.ref, { ...options, what });
}
