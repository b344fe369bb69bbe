import { hasImageParts, parseAttachmentUrl, type AttachmentRef } from './attachments.js';
import { isToolImagesMessage, lastUserIndex, messageText, type ChatMessage } from './messages.js';

/** The last exchange of a projection: where it starts and the user messages that opened it. */
export interface LastExchange {
  /** Index of its first user message: the exchange is `messages.slice(start)`. */
  start: number;
  /** The text of each user message of it, in order (a turn may have taken several; an image alone has ''). */
  userTexts: string[];
  /** The exchange holds the message at `summaryIndex` (a compaction folded the summary into it): it cannot be taken out. */
  holdsSummary: boolean;
}

/**
 * The last exchange of a projection, pure: the last run of consecutive user messages (a tool
 * round's images message is none) and everything after it (the answer, tool calls and results). `summaryIndex` is the index of the
 * message holding the session's summary block (-1 for none). Null when there is no user message
 * with text or an image.
 */
export function lastExchange(messages: readonly ChatMessage[], summaryIndex = -1): LastExchange | null {
  const end = lastUserIndex(messages);
  if (end < 0) return null;
  let start = end;
  while (start > 0 && messages[start - 1]!.role === 'user' && !isToolImagesMessage(messages[start - 1], messages[start - 2]?.role)) start--;
  const userTexts = askedOf(messages, start).map(textOf);
  if (userTexts.length === 0) return null;
  return { start, userTexts, holdsSummary: summaryIndex >= start };
}

/**
 * The images of each user message of `exchange` (one list per entry of `userTexts`, in order):
 * the references the projection keeps (`chatgate-attachment:`), whose bytes may still be stored.
 */
export function lastExchangeImages(messages: readonly ChatMessage[], exchange: LastExchange): AttachmentRef[][] {
  return askedOf(messages, exchange.start).map((message) => {
    if (typeof message.content === 'string' || message.content == null) return [];
    return message.content.flatMap((part) => (part.type === 'image_url' ? [parseAttachmentUrl(part.image_url.url)].filter((ref) => ref !== null) : []));
  });
}

/** A user message's text parts, joined (its image parts are not text: nothing of them is added). */
function textOf(message: ChatMessage): string {
  if (typeof message.content === 'string' || message.content == null) return messageText(message);
  return message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}

/** The user messages from `start` on (the run that opens the exchange) that say something: text or an image. */
function askedOf(messages: readonly ChatMessage[], start: number): ChatMessage[] {
  const asked: ChatMessage[] = [];
  for (let i = start; i < messages.length && messages[i]!.role === 'user'; i++) {
    const message = messages[i]!;
    if (messageText(message).trim() !== '' || hasImageParts(message)) asked.push(message);
  }
  return asked;
}
