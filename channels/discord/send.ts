/**
 * Discord sends (create message, trigger typing) over discord.js's REST client, and the one
 * conversion of discord.js errors into ChannelError. The token travels in a header, never in
 * a URL, and never reaches a message.
 */
import { createHash } from 'node:crypto';
import { ButtonStyle, ComponentType, DiscordAPIError, HTTPError, RateLimitError, Routes, type REST } from 'discord.js';
import type { MessageChoice } from '../../src/core/inbound.js';
import { truncateText } from '../../src/core/text.js';
import type { ChannelError } from '../../src/errors.js';
import { toPlatformChannelError, type ChatTarget, type PlatformFailure, type OutgoingText, type SentMessage } from '../channel.js';
import { isTokenRefusal } from './token-watch.js';

/** Discord's limits of a button: its `custom_id` and its label, characters. */
const MAX_CUSTOM_ID = 100;
const MAX_LABEL = 80;

/** The channel a target's messages go to: the thread when there is one. */
export function discordChannelOf(target: ChatTarget): string {
  return target.threadId ?? target.chatId;
}

/**
 * Creates a message. Mentions in the text never ping anyone (`allowed_mentions: none`); a reply
 * reference to a deleted message does not fail the send; a chunk sent again with the same
 * `deliveryId` is not posted twice (Discord's `enforce_nonce`). `@throws` ChannelError.
 */
export async function sendDiscordText(rest: REST, target: ChatTarget, message: OutgoingText): Promise<SentMessage> {
  const channelId = discordChannelOf(target);
  const body: Record<string, unknown> = { content: message.text, allowed_mentions: { parse: [], replied_user: false } };
  if (target.replyTo !== undefined) body.message_reference = { message_id: target.replyTo, fail_if_not_exists: false };
  if (message.choices && message.choices.length > 0) body.components = toDiscordButtons(message.choices);
  // Discord's idempotency key: the same chunk sent again (a gateway killed before it recorded the
  // first send) returns the message already created instead of posting it twice.
  if (message.deliveryId !== undefined) Object.assign(body, { nonce: discordNonce(message.deliveryId), enforce_nonce: true });
  try {
    const created = (await rest.post(Routes.channelMessages(channelId), { body })) as { id: string };
    return { messageId: created.id };
  } catch (err) {
    throw toDiscordChannelError(err, 'createMessage', channelId);
  }
}

/**
 * A message's choices as Discord components: one action row of buttons (at most 5), each carrying its
 * command as `custom_id` (at most 100 characters: a longer command has no button and is typed). The
 * first is green, a `/deny` red, the rest grey.
 */
export function toDiscordButtons(choices: readonly MessageChoice[]): unknown[] {
  const buttons = choices.filter((choice) => choice.command.length <= MAX_CUSTOM_ID).slice(0, 5).map((choice, index) => ({
    type: ComponentType.Button,
    style: /^\/deny\b/.test(choice.command) ? ButtonStyle.Danger : index === 0 ? ButtonStyle.Success : ButtonStyle.Secondary,
    label: truncateText(choice.label, MAX_LABEL),
    custom_id: choice.command,
  }));
  return buttons.length > 0 ? [{ type: ComponentType.ActionRow, components: buttons }] : [];
}

/** A chunk's delivery id as a Discord nonce (at most 25 characters). */
export function discordNonce(deliveryId: string): string {
  return createHash('sha256').update(deliveryId).digest('base64url').slice(0, 25);
}

/** Shows "typing…" in the channel or thread for ~10 s. `@throws` ChannelError. */
export async function sendDiscordTyping(rest: REST, target: ChatTarget): Promise<void> {
  const channelId = discordChannelOf(target);
  try {
    await rest.post(Routes.channelTyping(channelId));
  } catch (err) {
    throw toDiscordChannelError(err, 'triggerTyping', channelId);
  }
}

/** Converts a discord.js REST error into a ChannelError classified by the shared retry policy. */
export function toDiscordChannelError(err: unknown, operation: string, channelId?: string): ChannelError {
  return toPlatformChannelError(err, operation, channelId === undefined ? undefined : `discord:${channelId}`, describeDiscordError);
}

function describeDiscordError(err: unknown): PlatformFailure {
  if (err instanceof DiscordAPIError) return { failure: { status: err.status, description: err.message }, detail: `${err.status}: ${withoutStatus(err.message, err.status)} (code ${err.code})` };
  if (err instanceof RateLimitError) return { failure: { status: 429, retryAfterMs: err.retryAfter }, detail: '429: rate limited' };
  // discord.js dropped the token after a 401: nothing is sent, and trying again cannot change that.
  if (isTokenRefusal(err)) return { failure: { status: 401 }, detail: 'the bot token was refused (401 Unauthorized): a new token is needed' };
  if (err instanceof HTTPError) return { failure: { status: err.status }, detail: `${err.status}: ${withoutStatus(err.message, err.status)}` };
  return { failure: { network: true }, detail: err instanceof Error ? `network error: ${err.name}` : 'unexpected error' };
}

/** Discord's message without the status it may start with ("401: Unauthorized"): the detail names the status once. */
function withoutStatus(message: string, status: number): string {
  return message.startsWith(`${status}: `) ? message.slice(`${status}: `.length) : message;
}
