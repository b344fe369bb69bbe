/**
 * The worker's side of streaming: collects the answer's text as the model writes it and publishes
 * it through Redis (src/live-reply/record.ts), at most once per `intervalMs` with the latest text (an
 * update never queues behind another: latest wins). Best effort: a failed publish is logged at
 * debug and never fails or slows the turn.
 */
import { randomUUID } from 'node:crypto';
import type { InboundMessage } from '../src/core/inbound.js';
import type { AssistantMessage } from '../src/core/messages.js';
import type { Logger } from '../src/log.js';
import { replyJobId } from '../src/queue/names.js';
import type { RedisClient } from '../src/redis/client.js';
import { LIVE_REPLY_UPDATES, type LiveReplyTarget, type LiveReplyUpdate } from '../src/live-reply/record.js';

/** Default period of partial updates, ms. */
export const DEFAULT_LIVE_REPLY_PUBLISH_INTERVAL_MS = 250;

/** One turn's stream of partial replies. */
export interface TurnLiveReply {
  /** Appended answer text (the client's `onDelta`). */
  append(text: string): void;
  /** The text so far is void (the call is tried again): the next text starts the stream afresh. */
  restart(): void;
  /** The text so far was no reply (tool calls, a failed call): the gateway removes it; a later append starts afresh. */
  drop(): Promise<void>;
  /** Stops publishing (the final reply follows through the outbound queue); waits for a publish in flight. */
  end(): Promise<void>;
  /** The turn now answers `ids` (messages joined it): later updates name them. */
  answering(ids: readonly string[]): void;
}

/** Makes the {@link TurnLiveReply} of one turn, shown at `target`, answering the inbound messages `answers`. */
export type TurnLiveReplies = (target: LiveReplyTarget, answers: readonly string[]) => TurnLiveReply;

/** Options of {@link createTurnLiveReplies}. */
export interface TurnLiveRepliesOptions {
  keyPrefix: string;
  /** Least time between two updates of one stream, ms. Default {@link DEFAULT_LIVE_REPLY_PUBLISH_INTERVAL_MS}. */
  intervalMs?: number;
}

/** Creates the factory of turn streams publishing on `redis`. */
export function createTurnLiveReplies(deps: { redis: RedisClient; logger: Logger }, options: TurnLiveRepliesOptions): TurnLiveReplies {
  const intervalMs = options.intervalMs ?? DEFAULT_LIVE_REPLY_PUBLISH_INTERVAL_MS;
  return (target, answers) => createTurnLiveReply(deps, target, answers, options.keyPrefix, intervalMs);
}

function createTurnLiveReply(deps: { redis: RedisClient; logger: Logger }, target: LiveReplyTarget, answers: readonly string[], keyPrefix: string, intervalMs: number): TurnLiveReply {
  const instance = randomUUID().slice(0, 8);
  const state = { runs: 0, seq: 0, text: '', published: '', ended: false, lastAtMs: 0, answers: [...answers] };
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  const run = (): string => `${instance}.${state.runs}`;

  const send = (update: LiveReplyUpdate): Promise<void> => {
    const sending = LIVE_REPLY_UPDATES.publish(deps.redis, update, keyPrefix).catch((err: unknown) => {
      deps.logger.debug({ err, liveReplyId: target.liveReplyId }, 'partial reply not published');
    });
    inFlight = sending.finally(() => {
      if (inFlight === tracked) inFlight = undefined;
    });
    const tracked = inFlight;
    return sending;
  };
  const flush = (): void => {
    timer = undefined;
    if (state.ended || state.text === state.published) return;
    // One publish at a time: the next one goes out when this one is done, with the text by then.
    if (inFlight) {
      void inFlight.then(schedule);
      return;
    }
    state.published = state.text;
    state.lastAtMs = Date.now();
    void send({ ...target, run: run(), seq: state.seq++, text: state.text, state: 'open', atMs: state.lastAtMs, answers: state.answers });
  };
  const schedule = (): void => {
    if (timer || state.ended) return;
    timer = setTimeout(flush, Math.max(0, state.lastAtMs + intervalMs - Date.now()));
  };
  const reset = (): void => {
    clearTimeout(timer);
    timer = undefined;
    state.runs++;
    state.seq = 0;
    state.text = '';
    state.published = '';
  };

  return {
    append(text) {
      if (state.ended || text === '') return;
      state.text += text;
      schedule();
    },
    restart: reset,
    async drop() {
      const shown = state.seq > 0;
      const dropped = { ...target, run: run(), seq: state.seq, text: '', state: 'dropped' as const, atMs: Date.now(), answers: state.answers };
      reset();
      await inFlight;
      if (shown) await send(dropped);
    },
    async end() {
      state.ended = true;
      clearTimeout(timer);
      await inFlight;
    },
    answering(ids) {
      state.answers = [...ids];
    },
  };
}

/**
 * Where the turn of `items` (its inbound messages, in order) shows its partial reply: the chat of
 * its last message, under the id its reply will be committed with. Threaded like the reply (a
 * group's answer replies to the asker's message).
 */
export function liveReplyTargetOf(sessionId: string, items: readonly InboundMessage[]): LiveReplyTarget {
  const last = items[items.length - 1]!;
  const target: LiveReplyTarget = { liveReplyId: replyJobId(items.map((item) => item.id), 'reply'), sessionId, channel: last.channel, chatId: last.chatId };
  if (last.threadId) target.threadId = last.threadId;
  if (last.chatType) target.chatType = last.chatType;
  if (last.chatType === 'group' && last.platformMessageId) target.replyTo = last.platformMessageId;
  return target;
}

/** The client hooks of one model call: text goes to the stream, a retried attempt restarts it. */
export function liveReplyHooks(stream: TurnLiveReply | null): { onDelta?: (text: string) => void; onRestart?: () => void } {
  return stream ? { onDelta: (text) => stream.append(text), onRestart: () => stream.restart() } : {};
}

/**
 * After an answered call: a final answer ends the stream (its reply follows and takes the partial
 * over); tool calls, or an answer without text (a notice replaces it), drop what it showed.
 */
export async function settleLiveReply(stream: TurnLiveReply | null, answer: Pick<AssistantMessage, 'content' | 'tool_calls'>): Promise<void> {
  if (!stream) return;
  if ((answer.tool_calls ?? []).length > 0 || (answer.content ?? '').trim() === '') await stream.drop();
  else await stream.end();
}
