/**
 * `/retry`: the last exchange asked again through the inbox, with its images while their bytes are
 * stored. The ingest pipeline answers it at once, never behind the turn it is about (`/stop` is
 * src/turn-stop/stop-command.ts).
 */
import { attachmentUrl } from '../core/attachments.js';
import type { Attachment, InboundMessage } from '../core/inbound.js';
import { headEnd } from '../core/text.js';
import type { RetriedImage, RetryPort } from '../session/retry-command.js';

const RETRY_TEXT = {
  busy: 'A reply is being written, or waits for your approval of a tool call. Let it finish (or send /stop), then /retry.',
  nothing: 'There is nothing to retry yet: none of your messages is in the conversation.',
  summarised: 'Your last message was folded into the summary of the earlier conversation, so it cannot be asked again as it was. Please send it again.',
  unavailable: 'This command is not available here.',
} as const;

/** Characters of the retried message quoted in the answer. */
const QUOTE_CHARS = 80;

/**
 * `/retry`: takes out the last exchange and asks its user messages again through `accept` (the
 * inbox, in order), each with its images, then `dispatch` enqueues the turn. An image whose bytes
 * expired (CHATGATE_ATTACHMENT_TTL_SECONDS) keeps its reference, which the model reads as the
 * "image no longer stored" placeholder, and the answer names it. @returns the answer.
 */
export async function retryTurn(
  retry: RetryPort | undefined,
  sessionId: string,
  command: InboundMessage,
  accept: (message: InboundMessage) => Promise<unknown>,
  dispatch: () => void,
): Promise<string> {
  if (!retry) return RETRY_TEXT.unavailable;
  const asked: InboundMessage[] = [];
  const gone: string[] = [];
  const outcome = await retry.retry(sessionId, async (texts, images = []) => {
    asked.length = 0;
    gone.length = 0;
    for (const [k, text] of texts.entries()) {
      const message = retriedMessage(command, text, k, images[k] ?? []);
      await accept(message);
      asked.push(message);
      gone.push(...(images[k] ?? []).filter((image) => image.stored === null).map((image) => image.ref.fileName));
    }
  });
  if (outcome.state !== 'retried') return RETRY_TEXT[outcome.state];
  dispatch();
  const last = asked[asked.length - 1];
  const text = last?.text.trim() ? last.text : (last?.attachments ?? []).map((a) => `[${a.fileName ?? 'image'}]`).join(' ');
  const quoted = text.length > QUOTE_CHARS ? `${text.slice(0, headEnd(text, QUOTE_CHARS))}…` : text;
  const without = gone.length === 0 ? '' : ` — without ${gone.join(', ')}: kept for a limited time, ${gone.length === 1 ? 'it is' : 'they are'} gone now; send ${gone.length === 1 ? 'it' : 'them'} again to have ${gone.length === 1 ? 'it' : 'them'} looked at`;
  return `Asking again: “${quoted.replace(/\s+/g, ' ').trim()}”${without}`;
}

/**
 * The inbound message that asks `text` again, from the `/retry` command's chat. In groups the
 * stored text starts with its sender's name (`Ann: …`), which the worker adds again: it is taken off.
 */
function retriedMessage(command: InboundMessage, text: string, index: number, images: readonly RetriedImage[]): InboundMessage {
  const { unsupportedReply: _none, clientAddress: _address, refusalsAnswered: _answered, ...base } = command;
  const message: InboundMessage = { ...base, id: `${command.id}:retry:${index}`, text, attachments: images.map(toAttachment) };
  if (command.chatType !== 'group') return message;
  const named = /^([^\n:]{1,64}): ([\s\S]*)$/.exec(text);
  return named ? { ...message, userName: named[1]!, text: named[2]! } : message;
}

/**
 * A retried image as the attachment of the new message: the same stored bytes (the same key, so
 * the same TTL); an expired one keeps its reference with nothing left (`bytes` 0), which the worker
 * shows the model as the "image no longer stored" placeholder, as for any image that expired.
 */
function toAttachment(image: RetriedImage): Attachment {
  const { ref } = image;
  const stored = image.stored ?? { id: ref.id, bytes: 0, expiresAtMs: 0 };
  return { kind: 'photo', ref: attachmentUrl(ref), mimeType: ref.mimeType, fileName: ref.fileName, size: stored.bytes, stored };
}
