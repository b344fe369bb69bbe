/**
 * Discord's partial replies: the message edited in place (PATCH /channels/:id/messages/:id) and
 * deleted when its text was no reply. Errors are converted like every Discord call's; editing a
 * message to the text it has changes nothing, so a repeated edit is idempotent.
 */
import { Routes, type REST } from 'discord.js';
import type { ChatTarget, OutgoingText } from '../channel.js';
import { discordChannelOf, toDiscordChannelError } from './send.js';

/** Unknown Message: the message is gone (deleted by someone). */
const UNKNOWN_MESSAGE = 10008;

/**
 * Replaces a message's content; mentions in it never ping anyone. `closeChoices`: its buttons are
 * taken away too (a decided question). `@throws` ChannelError.
 */
export async function editDiscordText(rest: REST, target: ChatTarget, messageId: string, message: OutgoingText, closeChoices = false): Promise<void> {
  const channelId = discordChannelOf(target);
  try {
    const body = { content: message.text, allowed_mentions: { parse: [], replied_user: false }, ...(closeChoices ? { components: [] } : {}) };
    await rest.patch(Routes.channelMessage(channelId, messageId), { body });
  } catch (err) {
    throw toDiscordChannelError(err, 'editMessage', channelId);
  }
}

/** Deletes a message the bot sent; one already gone is success. `@throws` ChannelError. */
export async function deleteDiscordMessage(rest: REST, target: ChatTarget, messageId: string): Promise<void> {
  const channelId = discordChannelOf(target);
  try {
    await rest.delete(Routes.channelMessage(channelId, messageId));
  } catch (err) {
    if ((err as { code?: unknown }).code === UNKNOWN_MESSAGE) return;
    throw toDiscordChannelError(err, 'deleteMessage', channelId);
  }
}
