import type { ChannelName } from '../core/inbound.js';
import { turnSignalChannel } from '../redis/keys.js';
import { defineTopic } from '../redis/pubsub.js';

/** A turn signal published by workers on the pub/sub channel `<keyPrefix>signals`. */
export interface TurnSignal {
  /** `turn-started` when a turn begins, `typing` before each model call, `turn-ended` after commit. */
  type: 'turn-started' | 'typing' | 'turn-ended';
  sessionId: string;
  channel: ChannelName;
  chatId: string;
  threadId?: string;
  atMs: number;
}

/**
 * Turn signals: workers publish, every gateway subscribes on a dedicated connection (pass
 * `duplicateRedis(redis)`). Best effort: signals are hints, never state.
 */
export const TURN_SIGNALS = defineTopic<TurnSignal>({
  channel: turnSignalChannel, what: 'turn signal', component: 'turn-signals', logged: ['sessionId', 'type'],
  fields: { type: ['turn-started', 'typing', 'turn-ended'], sessionId: 'string', channel: 'string', chatId: 'string' },
});
