/**
 * The cursors of the Discord catch-up (channels/discord/catch-up.ts), as a type both sides share:
 * the channel adapter reads and writes them, redis-cursors.ts keeps them in Redis.
 */

/** Where a Discord message was received: enough to translate a message fetched from REST again. */
export interface DiscordPlace {
  channelId: string;
  /** Null in DMs. */
  guildId: string | null;
  threadParentId?: string;
}

/** The newest message handled in each channel, kept where every gateway of the bot reads it. */
export interface DiscordCursorStore {
  /** Records `messageId` as the newest handled in its channel. */
  record(place: DiscordPlace, messageId: string): Promise<void>;
  /** Channels whose newest message was handled after `sinceMs` (ms since epoch), the most recent first; older entries are forgotten. */
  recent(sinceMs: number, limit: number): Promise<Array<DiscordPlace & { messageId: string }>>;
  /** Forgets a channel (the bot cannot read it any more). */
  forget(channelId: string): Promise<void>;
  /** Records that a gateway of the bot is connected at `atMs` (ms since epoch). */
  markConnected(atMs: number): Promise<void>;
  /** When a gateway of the bot was last known connected, ms since epoch; null before the first connect. */
  lastConnected(): Promise<number | null>;
}
