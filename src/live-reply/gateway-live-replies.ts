/**
 * The gateway's side of streaming: listens to the workers' partial replies (src/live-reply/record.ts)
 * and shows each in the chat of a channel this gateway runs (src/live-reply/live-reply-view.ts), then
 * hands the chat over to the final reply. Best effort throughout: a partial is never retried into
 * a backlog, and nothing here can fail or hold up a turn or a delivery.
 *
 * The final reply is delivered once, by the outbound queue as always: before its first chunk the
 * delivery asks {@link GatewayLiveReplies.takeOver}, which stops the stream (locally and, through
 * the stream's view record in Redis, for good) and names the message the partial is shown in; the
 * delivery edits the first chunk into that message (an edit repeated after a crash changes
 * nothing, so it stays idempotent) and sends the rest. A draft (Telegram private chat, web chat)
 * is replaced by the final message itself. A stream with no update for `idleMs` (its worker died
 * and no retry took it up) is taken away: a crashed worker's partial text never stays as a reply.
 */
import { randomUUID } from 'node:crypto';
import type { Channel } from '../../channels/channel.js';
import type { ChannelName, OutboundMessage } from '../core/inbound.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { createLiveReplyRecords, LIVE_REPLY_UPDATES, type LiveReplyUpdate, type LiveReplyRecords } from './record.js';
import { LiveReplyView, type ChatPace } from './live-reply-view.js';

/** Options of {@link startGatewayLiveReplies}. */
export interface GatewayLiveRepliesOptions {
  keyPrefix: string;
  /** Least time between two partial updates shown in one chat, ms, by channel. Default telegram and discord 1000, web and api 0. */
  intervalMs?: Partial<Record<ChannelName, number>>;
  /** Longest interval a chat that was rate limited slows down to, ms. Default 10 000. */
  maxIntervalMs?: number;
  /** A stream without an update for this long is taken away, ms. Default 150 000. */
  idleMs?: number;
}

/** The running streaming side of the gateway. */
export interface GatewayLiveReplies {
  /**
   * Stops the stream `message` ends (a reply's own, or a notice's `liveReplyId`) for good.
   * @returns the message id its partial is shown in, to edit the first chunk into.
   */
  takeOver(message: OutboundMessage): Promise<string | undefined>;
  /** Handles one update (what the subscription calls; tests and embedders may call it too). */
  onUpdate(update: LiveReplyUpdate): void;
  /** Stops listening. */
  close(): Promise<void>;
}

const DEFAULT_INTERVAL_MS: Record<ChannelName, number> = { telegram: 1000, discord: 1000, web: 0, api: 0 };
/** How long a finished stream id is remembered, so a late update for it is ignored, ms. */
const ENDED_TTL_MS = 10 * 60_000;

interface Live {
  view: LiveReplyView;
  run: string;
  seq: number;
  lastAtMs: number;
  /** Taken away by the sweep (abandoned); forgotten at a later sweep once its view is idle. */
  swept: boolean;
}

/**
 * Starts listening on `subscriber` (a dedicated connection: `duplicateRedis(redis)`); `redis`
 * holds the streams' view records. Channels the gateway does not run are ignored.
 */
export async function startGatewayLiveReplies(
  deps: { redis: RedisClient; subscriber: RedisClient; channels: ReadonlyMap<ChannelName, Channel>; logger: Logger },
  options: GatewayLiveRepliesOptions,
): Promise<GatewayLiveReplies> {
  const log = deps.logger.child({ component: 'live-replies' });
  const views = createLiveReplyRecords(deps.redis, options.keyPrefix);
  const registry = createRegistry({ channels: deps.channels, views, log }, options);
  const unsubscribe = await LIVE_REPLY_UPDATES.subscribe(deps.subscriber, (update) => registry.onUpdate(update), options.keyPrefix, deps.logger);
  const idleMs = options.idleMs ?? 150_000;
  const sweeper = setInterval(() => registry.sweep(idleMs), Math.max(10, Math.floor(idleMs / 4)));
  sweeper.unref();
  return {
    takeOver: (message) => registry.takeOver(message),
    onUpdate: (update) => registry.onUpdate(update),
    async close() {
      clearInterval(sweeper);
      await unsubscribe();
    },
  };
}

function createRegistry(deps: { channels: ReadonlyMap<ChannelName, Channel>; views: LiveReplyRecords; log: Logger }, options: GatewayLiveRepliesOptions) {
  const streams = new Map<string, Live>();
  const owner = randomUUID();
  const ended = new Map<string, number>();
  const paces = new Map<string, ChatPace>();
  const intervalOf = (channel: ChannelName): number => options.intervalMs?.[channel] ?? DEFAULT_INTERVAL_MS[channel];
  const maxIntervalMs = options.maxIntervalMs ?? 10_000;
  const paceOf = (update: LiveReplyUpdate): ChatPace => {
    const key = `${update.channel}:${update.chatId}`;
    let pace = paces.get(key);
    if (!pace) paces.set(key, (pace = { intervalMs: intervalOf(update.channel), nextAtMs: 0 }));
    return pace;
  };

  const liveFor = (update: LiveReplyUpdate): Live | undefined => {
    const existing = streams.get(update.liveReplyId);
    if (existing) return existing;
    const channel = deps.channels.get(update.channel);
    if (!channel || (!channel.sendDraft && !channel.editMessage)) return undefined;
    const baseIntervalMs = intervalOf(update.channel);
    const view = new LiveReplyView({ channel, views: deps.views, owner, log: deps.log, pace: paceOf(update), baseIntervalMs, maxIntervalMs: Math.max(baseIntervalMs, maxIntervalMs) }, update);
    const live: Live = { view, run: '', seq: -1, lastAtMs: Date.now(), swept: false };
    streams.set(update.liveReplyId, live);
    return live;
  };

  return {
    onUpdate(update: LiveReplyUpdate): void {
      if (ended.has(update.liveReplyId)) return;
      const live = liveFor(update);
      if (!live) return;
      const restart = update.run !== live.run;
      // Pub/sub keeps one publisher's order; an older update of the same run is stale.
      if (!restart && update.seq <= live.seq) return;
      live.run = update.run;
      live.seq = update.seq;
      live.lastAtMs = Date.now();
      live.swept = false;
      if (update.state === 'dropped') live.view.drop();
      else live.view.show(update.text, restart, update.answers);
    },
    async takeOver(message: OutboundMessage): Promise<string | undefined> {
      const liveReplyId = message.liveReplyId ?? message.id;
      ended.set(liveReplyId, Date.now());
      const live = streams.get(liveReplyId);
      streams.delete(liveReplyId);
      const local = live ? await live.view.takeOver() : undefined;
      // Only a chat every gateway reaches has a view record (the web chat's live bubbles are each gateway's own).
      const channel = deps.channels.get(message.channel);
      if (!channel || channel.localDrafts || (!channel.sendDraft && !channel.editMessage)) return local;
      // The record in Redis stops any other gateway's view (waiting for a call it is making), and knows the message after a crash.
      const recorded = await deps.views.takeOver(message.sessionId, liveReplyId);
      return recorded ?? local;
    },
    sweep(idleMs: number): void {
      const now = Date.now();
      for (const [liveReplyId, live] of streams) {
        if (now - live.lastAtMs < idleMs) continue;
        // Forgotten only once its drop has run: a view with a call in flight still owns its message.
        if (live.swept) {
          if (live.view.idle) streams.delete(liveReplyId);
          continue;
        }
        deps.log.info({ liveReplyId, sessionId: live.view.partial.sessionId }, 'partial reply abandoned (no update, no final reply): taken away');
        live.view.drop();
        live.swept = true;
        live.lastAtMs = now;
      }
      for (const [liveReplyId, atMs] of ended) if (now - atMs > ENDED_TTL_MS) ended.delete(liveReplyId);
      // A chat quiet this long starts at its base pace again (and the map stays bounded).
      for (const [chat, pace] of paces) if (now - pace.nextAtMs > idleMs) paces.delete(chat);
    },
  };
}
