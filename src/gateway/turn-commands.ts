/**
 * The chat commands that act on a session's turn: `/stop` (through Redis to the worker holding the
 * session, on any machine) and `/retry` (the last exchange asked again through the inbox). The
 * ingest pipeline answers them at once, never behind the turn they are about.
 */
import type { InboundMessage } from '../core/inbound.js';
import { headEnd } from '../core/text.js';
import type { RedisClient } from '../redis/client.js';
import { sessionKeys } from '../redis/keys.js';
import { requestStop } from '../redis/turn-stop.js';
import type { RetryPort } from '../session/retry.js';

/** `/stop` with nothing running. */
export const NOTHING_TO_STOP = 'Nothing is running right now, so there is nothing to stop.';

const RETRY_TEXT = {
  busy: 'A reply is being written right now. Wait for it (or send /stop), then /retry.',
  nothing: 'There is nothing to retry yet: none of your messages is in the conversation.',
  summarised: 'Your last message was folded into the summary of the earlier conversation, so it cannot be asked again as it was. Please send it again.',
  unavailable: 'This command is not available here.',
} as const;

/** Characters of the retried message quoted in the answer. */
const QUOTE_CHARS = 80;

/**
 * `/stop`: records a stop request for the running (or next) turn and wakes the workers.
 * @returns null when a turn will answer "Stopped.", else the answer that nothing runs.
 */
export async function stopTurn(redis: RedisClient, sessionId: string, keyPrefix: string): Promise<string | null> {
  const found = await requestStop(redis, sessionId, sessionKeys(sessionId, keyPrefix), { keyPrefix });
  return found.state === 'idle' ? NOTHING_TO_STOP : null;
}

/**
 * `/retry`: takes out the last exchange and asks its user messages again through `accept` (the
 * inbox, in order), then `dispatch` enqueues the turn. @returns the answer.
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
  const outcome = await retry.retry(sessionId, async (texts) => {
    for (const [k, text] of texts.entries()) {
      const message = retriedMessage(command, text, k);
      await accept(message);
      asked.push(message);
    }
  });
  if (outcome.state !== 'retried') return RETRY_TEXT[outcome.state];
  dispatch();
  const last = asked[asked.length - 1]?.text ?? '';
  const quoted = last.length > QUOTE_CHARS ? `${last.slice(0, headEnd(last, QUOTE_CHARS))}…` : last;
  return `Asking again: “${quoted.replace(/\s+/g, ' ').trim()}”`;
}

/**
 * The inbound message that asks `text` again, from the `/retry` command's chat. In groups the
 * stored text starts with its sender's name (`Ann: …`), which the worker adds again: it is taken off.
 */
function retriedMessage(command: InboundMessage, text: string, index: number): InboundMessage {
  const { unsupportedReply: _none, clientAddress: _address, refusalsAnswered: _answered, ...base } = command;
  const message: InboundMessage = { ...base, id: `${command.id}:retry:${index}`, text, attachments: [] };
  if (command.chatType !== 'group') return message;
  const named = /^([^\n:]{1,64}): ([\s\S]*)$/.exec(text);
  return named ? { ...message, userName: named[1]!, text: named[2]! } : message;
}
