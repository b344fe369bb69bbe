/**
 * Downloads a Discord attachment from its CDN URL (signed by Discord, no bot token needed), within
 * the byte limit; the size Discord reported is checked first. Only Discord's CDN hosts (and the
 * configured API root's origin, where a test or proxy serves them) are fetched, redirects included:
 * an attachment reference is never a way to make the gateway request another address.
 */
import type { Attachment } from '../../src/core/inbound.js';
import type { DownloadOptions } from '../channel.js';
import { fetchLimited, tooLarge, type AllowedHosts } from '../download.js';

/** The hosts Discord serves attachments from. */
export const DISCORD_CDN_HOSTS: readonly string[] = ['cdn.discordapp.com', 'media.discordapp.net'];

/** Where attachment downloads may go: Discord's CDN, and the origin of `apiRoot` (e.g. DISCORD_API_ROOT). */
export function discordDownloadHosts(apiRoot: string): AllowedHosts {
  return { origins: [new URL(apiRoot).origin], httpsHosts: DISCORD_CDN_HOSTS };
}

/**
 * The bytes of `attachment` (its `ref` is the attachment's URL), at most `options.maxBytes`.
 * @throws ChannelError `CHANNEL_FILE_TOO_LARGE` over the limit, `CHANNEL_PERMANENT` for an address
 * outside `allowedHosts`, else as {@link fetchLimited}.
 */
export async function downloadDiscordAttachment(attachment: Attachment, options: DownloadOptions, allowedHosts: AllowedHosts): Promise<Buffer> {
  const what = `discord attachment ${attachment.fileName ?? attachment.kind}`;
  if (attachment.size !== undefined && attachment.size > options.maxBytes) throw tooLarge({ what, maxBytes: options.maxBytes }, attachment.size);
  return fetchLimited(attachment.ref, { ...options, what, allowedHosts });
}
