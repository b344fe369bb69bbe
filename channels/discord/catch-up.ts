/**
 * Messages sent while no gateway was connected to Discord (a restart, a fail-over gap): Discord
 * sends nothing again on a new connection, so after each connect the channel asks REST for the
 * messages after the newest one it had received in each recently active channel, oldest first,
 * and hands them on like live ones. Guild channels where the bot had handled nothing within the
 * window have no cursor: those whose newest message (as the connect's GUILD_CREATE tells) is
 * younger than the gap's start are read from the gap's start — a mention in a quiet channel during
 * a fail-over is answered too. The gateway's seen markers drop what the previous connection had
 * handed on already, so a message is never answered twice.
 */
import { Routes, SnowflakeUtil, type REST } from 'discord.js';
import type { DiscordCursorStore, DiscordPlace } from './catch-up-cursors.js';
import type { Logger } from '../../src/log.js';
import type { DiscordMessageLike } from './translate.js';

/** Compares two snowflakes (ids grow with time). */
export function compareSnowflakes(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** A message object as Discord's REST API returns it (the fields read here). */
interface RawMessage {
  id: string;
  channel_id: string;
  author: { id: string; username: string; global_name?: string | null; bot?: boolean };
  content: string;
  mentions?: Array<{ id: string }>;
  attachments?: Array<{ url: string; filename?: string; content_type?: string; size?: number }>;
  message_reference?: { message_id?: string };
  referenced_message?: { author?: { id: string } } | null;
}

/** Options of the catch-up (the channel's `catchUp` option). */
export interface CatchUpOptions {
  cursors: DiscordCursorStore;
  /** Channels active within this long are looked at, ms. Default 3 600 000. */
  windowMs?: number;
  /** At most this many channels, the most recently active first. Default 200. */
  maxChannels?: number;
  /** Messages fetched per channel at most, in REST pages of 100. Default 300. */
  maxMessages?: number;
  /** How often a connected gateway records that it is (the next gap's start), ms. Default 30 000. */
  connectedIntervalMs?: number;
}

/** A guild channel or thread the client knows since its connect, with its newest message then. */
export interface KnownChannel extends DiscordPlace {
  lastMessageId: string | null;
}

/** How much earlier than the recorded gap start channels are read: clocks of gateways and Discord differ. */
const CLOCK_MARGIN_MS = 5_000;

/**
 * The guild channels with no cursor among `known` that received a message after `gapStartMs`
 * (ms since epoch; null when no gateway of the bot was ever connected: nothing is caught up), each to
 * be read from the gap's start (at most the window back). The most recently active first.
 */
export function discoveredPlaces(
  known: readonly KnownChannel[], withCursor: ReadonlySet<string>, gapStartMs: number | null, options: CatchUpOptions, now = Date.now(),
): Array<DiscordPlace & { messageId: string }> {
  if (gapStartMs === null) return [];
  const fromMs = Math.max(gapStartMs - CLOCK_MARGIN_MS, now - (options.windowMs ?? 3_600_000));
  const from = SnowflakeUtil.generate({ timestamp: fromMs, increment: 0n, processId: 0n, workerId: 0n }).toString();
  return known
    .filter((c) => c.guildId !== null && !withCursor.has(c.channelId) && c.lastMessageId !== null && /^\d+$/.test(c.lastMessageId) && compareSnowflakes(c.lastMessageId, from) > 0)
    .sort((a, b) => compareSnowflakes(b.lastMessageId!, a.lastMessageId!))
    .map(({ lastMessageId: _, ...place }) => ({ ...place, messageId: from }));
}

/** The channels to catch up after a connect: the most recently active ones within the window. */
export function placesToCatchUp(options: CatchUpOptions, now = Date.now()): Promise<Array<DiscordPlace & { messageId: string }>> {
  return options.cursors.recent(now - (options.windowMs ?? 3_600_000), options.maxChannels ?? 200);
}

/**
 * The messages `place` received after its cursor, oldest first (at most `maxMessages`). A channel
 * the bot cannot read any more is forgotten; other failures are logged and end the channel's
 * catch-up with what was fetched so far (the next connect tries again).
 */
export async function fetchMissed(deps: { rest: REST; log: Logger }, options: CatchUpOptions, place: DiscordPlace & { messageId: string }): Promise<DiscordMessageLike[]> {
  const max = options.maxMessages ?? 300;
  const missed: DiscordMessageLike[] = [];
  try {
    // Each page holds the oldest messages after `after`; a full page means more may follow.
    for (let after = place.messageId; missed.length < max;) {
      const limit = Math.min(100, max - missed.length);
      const query = new URLSearchParams({ after, limit: String(limit) });
      const page = ((await deps.rest.get(Routes.channelMessages(place.channelId), { query })) as RawMessage[]).sort((a, b) => compareSnowflakes(a.id, b.id));
      missed.push(...page.map((raw) => fromRaw(raw, place)));
      if (page.length < limit) break;
      after = page.at(-1)!.id;
    }
    return missed;
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 403 || status === 404) {
      deps.log.info({ channelId: place.channelId, status }, 'discord channel no longer readable: not caught up any more');
      await options.cursors.forget(place.channelId);
    } else deps.log.warn({ err, channelId: place.channelId }, 'discord catch-up of a channel failed; the next connect tries again');
    return missed;
  }
}

function fromRaw(raw: RawMessage, place: DiscordPlace): DiscordMessageLike {
  const like: DiscordMessageLike = {
    id: raw.id,
    channelId: raw.channel_id,
    guildId: place.guildId,
    author: { id: raw.author.id, bot: raw.author.bot === true, username: raw.author.username, ...(raw.author.global_name ? { displayName: raw.author.global_name } : {}) },
    content: raw.content,
    mentionedUserIds: (raw.mentions ?? []).map((user) => user.id),
    attachments: (raw.attachments ?? []).map((a) => ({ url: a.url, ...(a.content_type ? { contentType: a.content_type } : {}), ...(a.filename ? { name: a.filename } : {}), ...(a.size !== undefined ? { size: a.size } : {}) })),
  };
  if (place.threadParentId) like.threadParentId = place.threadParentId;
  if (raw.referenced_message?.author) like.repliedToUserId = raw.referenced_message.author.id;
  if (raw.message_reference?.message_id) like.referenceMessageId = raw.message_reference.message_id;
  return like;
}
