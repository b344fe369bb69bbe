/**
 * A press of a message's button (INTERACTION_CREATE): the button's command (its `custom_id`) goes to
 * the gateway as a message of the user who pressed it, and its answer is shown where it was pressed.
 * When the press settled the question, the decision itself has already edited the question (its text
 * says it, its buttons gone: src/gateway/show-decision.ts, as after a typed command, the expiry or
 * `/stop`), so the press is only acknowledged (DEFERRED_UPDATE_MESSAGE); when it was decided before,
 * an ephemeral follow-up says so; otherwise (not theirs to decide, refused) an ephemeral reply says
 * why. Discord waits 3 s for the first answer: when the gateway is slower, the press is deferred first.
 */
import { MessageFlags, type ButtonInteraction, type Interaction } from 'discord.js';
import { MAX_USER_NAME_CHARS, toWellFormedInbound, type InboundMessage, type InboundVerdict } from '../../src/core/inbound.js';
import { truncateText } from '../../src/core/text.js';
import type { Logger } from '../../src/log.js';
import type { InboundHandler } from '../channel.js';

/** Default of how long a press waits for the gateway before it is deferred, ms (Discord allows 3 s for the first answer). */
export const DEFAULT_DEFER_AFTER_MS = 2000;
/** The answer when the gateway could not take a press (Discord does not send it again). */
export const PRESS_NOT_TAKEN = 'Sorry, I could not take that just now. Please press again in a moment.';
const MAX_CONTENT = 2000;
const NO_MENTIONS = { parse: [] };

/** Handles `interaction` when it is a press of one of the bot's command buttons; ignores every other. */
export async function handleInteraction(interaction: Interaction, onMessage: InboundHandler | undefined, log: Logger, deferAfterMs = DEFAULT_DEFER_AFTER_MS): Promise<void> {
  if (!interaction.isButton() || !interaction.customId.startsWith('/') || !onMessage) return;
  try {
    await answerPress(interaction, onMessage, log, deferAfterMs);
  } catch (err) {
    // Answered too late or twice (10062, 40060), or Discord unreachable: nothing left to show.
    log.warn({ err, interactionId: interaction.id }, 'discord button press not answered');
  }
}

async function answerPress(interaction: ButtonInteraction, onMessage: InboundHandler, log: Logger, deferAfterMs: number): Promise<void> {
  const verdict = onMessage(toPressMessage(interaction)).then((value) => ({ value }), (err: unknown) => ({ err }));
  let timer: NodeJS.Timeout | undefined;
  const slow = new Promise<'slow'>((resolve) => { timer = setTimeout(() => resolve('slow'), deferAfterMs); });
  const first = await Promise.race([verdict, slow]);
  clearTimeout(timer);
  const deferred = first === 'slow';
  if (deferred) await interaction.deferUpdate();
  const outcome = deferred ? await verdict : first;
  if ('err' in outcome) {
    log.warn({ err: outcome.err, interactionId: interaction.id }, 'discord button press not accepted');
    return void (await privately(interaction, PRESS_NOT_TAKEN, deferred));
  }
  const { text, settled, repeat } = answerOf(outcome.value);
  if (!settled) return void (await privately(interaction, text, deferred));
  // Settled: the decision showed itself on the question; the press only needs its acknowledgement.
  if (!deferred) await interaction.deferUpdate();
  // Decided before (a second press racing the first): the presser is told.
  if (repeat) await interaction.followUp({ content: truncateText(text, MAX_CONTENT), flags: MessageFlags.Ephemeral, allowedMentions: NO_MENTIONS });
}

/** The press as the gateway's message: the command, from the user who pressed, in the chat (and thread) of the button. */
export function toPressMessage(interaction: ButtonInteraction): InboundMessage {
  const channel = interaction.channel;
  const thread = channel?.isThread() && channel.parentId ? { chatId: channel.parentId, threadId: channel.id } : { chatId: interaction.channelId ?? interaction.message.channelId };
  return toWellFormedInbound({
    id: `discord:press:${interaction.id}`, channel: 'discord', ...thread, userId: interaction.user.id,
    userName: truncateText(interaction.user.globalName || interaction.user.username, MAX_USER_NAME_CHARS),
    text: interaction.customId, attachments: [], chatType: interaction.guildId ? 'group' : 'private',
    receivedAt: Date.now(), answerInPlace: true, refusalsAnswered: true,
  });
}

function answerOf(verdict: InboundVerdict | void): { text: string; settled: boolean; repeat?: boolean } {
  if (verdict?.answer) return verdict.answer;
  return { text: verdict?.reason ?? 'Done.', settled: false };
}

/** An answer only the presser sees: an ephemeral reply, or an ephemeral follow-up after a deferral. */
async function privately(interaction: ButtonInteraction, text: string, deferred: boolean): Promise<void> {
  const options = { content: truncateText(text, MAX_CONTENT), flags: MessageFlags.Ephemeral, allowedMentions: NO_MENTIONS } as const;
  if (deferred) await interaction.followUp(options);
  else await interaction.reply(options);
}
