import type { Channel } from '../../channels/channel.js';
import { tailStart } from '../core/text.js';

/** Marks a message that is still being written. */
export const WRITING_MARK = ' ▍';
const CUT_MARK = '… ';

/**
 * The text a partial reply shows in a message edited in place: the text so far with a "still
 * writing" mark, and when that is over the channel's limit its latest part after `…` (the final
 * reply, split as usual, shows the whole). '' when there is nothing to show yet (blank text).
 */
export function previewText(text: string, channel: Pick<Channel, 'maxMessageLength'>): string {
  const body = text.trimEnd();
  if (body.trim() === '') return '';
  const room = channel.maxMessageLength - WRITING_MARK.length;
  if (body.length <= room) return body + WRITING_MARK;
  return CUT_MARK + body.slice(tailStart(body, room - CUT_MARK.length)).trimStart() + WRITING_MARK;
}
