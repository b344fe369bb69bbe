/**
 * The ingest pipeline's side of busy modes (src/core/busy-mode.ts): the accept tags each message
 * with its channel's mode, a message in `interrupt` mode stops the running turn, and `/mode` reads
 * and sets the chat's own choice (src/redis/chat-settings.ts). Steering itself is the worker's.
 */
import { CHAT_SETTINGS_VERSION, channelBusyMode, DEFAULT_BUSY_MODE, effectiveBusyMode, parseChatSettings, type BusyMode, type BusyModeDefaults, type ChatSettings } from '../core/busy-mode.js';
import type { InboundMessage } from '../core/inbound.js';
import { readChatSettings, writeBusyMode } from '../redis/chat-settings.js';
import { sessionKeys } from '../redis/keys.js';
import { interruptTurn } from '../turn-stop/stop-command.js';
import type { BusyModePort } from './commands.js';
import type { IngestContext } from './ingest-context.js';

/** What the accept adds to a message: the busy mode of its channel (an event, which the model never sees, gets none). */
export function busyModeTag(ctx: IngestContext, message: InboundMessage): { busyMode?: BusyMode } {
  return message.event === undefined ? { busyMode: channelBusyMode(busyDefaults(ctx), message.channel) } : {};
}

/**
 * A message in `interrupt` busy mode stops the turn running for its session (as `/stop` does); the
 * message's own turn follows. Unreadable chat settings count as none chosen (logged).
 */
export async function interruptIfAsked(ctx: IngestContext, message: InboundMessage, sessionId: string, rawSettings: string | undefined): Promise<void> {
  let settings: ChatSettings;
  try {
    settings = parseChatSettings(rawSettings);
  } catch (err) {
    ctx.log.warn({ err, sessionId }, 'chat settings unreadable: the channel\'s busy mode applies');
    settings = { v: CHAT_SETTINGS_VERSION };
  }
  if (effectiveBusyMode(settings, busyDefaults(ctx), message.channel) !== 'interrupt') return;
  await interruptTurn(ctx.deps.redis, sessionId, ctx.options.keyPrefix, message.id, ctx.log);
}

function busyDefaults(ctx: IngestContext): BusyModeDefaults {
  return ctx.options.busyMode ?? { mode: DEFAULT_BUSY_MODE };
}

/** `/mode` of the message's chat: its settings in the session's meta (src/redis/chat-settings.ts). */
export function busyModePort(ctx: IngestContext, message: InboundMessage): BusyModePort {
  const keysOf = (sessionId: string) => sessionKeys(sessionId, ctx.options.keyPrefix);
  const channelMode = channelBusyMode(busyDefaults(ctx), message.channel);
  return {
    async current(sessionId) {
      const settings = await readChatSettings(ctx.deps.redis, keysOf(sessionId));
      return { mode: settings.busyMode ?? channelMode, chosen: settings.busyMode !== undefined, channelMode };
    },
    async set(sessionId, mode) {
      await writeBusyMode(ctx.deps.redis, keysOf(sessionId), mode);
      ctx.log.info({ sessionId, mode: mode ?? 'default' }, 'chat busy mode set');
    },
  };
}
