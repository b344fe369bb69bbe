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

const TURN_SIGNALS = defineTopic<TurnSignal>({
  channel: turnSignalChannel, parse: parseSignal, what: 'turn signal', component: 'turn-signals',
  describe: (signal) => ({ sessionId: signal.sessionId, type: signal.type }),
});

/** Publishes a turn signal (best effort: signals are hints, never state). */
export const publishTurnSignal = TURN_SIGNALS.publish;

/**
 * Subscribes to turn signals on a dedicated connection (pass `duplicateRedis(redis)`). A malformed
 * payload, or an `onSignal` that throws, is logged (warn) and skipped. @returns unsubscribe-and-close.
 */
export const subscribeTurnSignals = TURN_SIGNALS.subscribe;

const SIGNAL_TYPES = new Set<string>(['turn-started', 'typing', 'turn-ended']);

function parseSignal(value: object): TurnSignal | null {
  const signal = value as Partial<TurnSignal>;
  const ok = SIGNAL_TYPES.has(String(signal.type)) && typeof signal.sessionId === 'string' && typeof signal.channel === 'string' && typeof signal.chatId === 'string';
  return ok ? (signal as TurnSignal) : null;
}
