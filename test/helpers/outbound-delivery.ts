import type { EventEmitter } from 'node:events';
import type { OutboundMessage } from '../../src/core/inbound.js';
import type { Delivery } from '../../src/outbound/delivery.js';

/** What {@link recordingDelivery} saw: calls per reply id, and the replies it delivered (ids and messages) in order. */
export interface RecordedDeliveries {
  delivery: Delivery;
  calls: Map<string, number>;
  delivered: string[];
  messages: OutboundMessage[];
}

/**
 * A fake delivery for the outbound consumer: records each reply it delivers (emitting `delivered`
 * on `events`), or throws what `fail(message, calls)` returns; a send takes `sendMs()` ms.
 */
export function recordingDelivery(options: { events?: EventEmitter; fail?: (message: OutboundMessage, calls: number) => Error | undefined; sendMs?: () => number } = {}): RecordedDeliveries {
  const calls = new Map<string, number>();
  const delivered: string[] = [];
  const messages: OutboundMessage[] = [];
  const delivery: Delivery = {
    deliver: async (message) => {
      const n = (calls.get(message.id) ?? 0) + 1;
      calls.set(message.id, n);
      const error = options.fail?.(message, n);
      if (error) throw error;
      delivered.push(message.id);
      messages.push(message);
      options.events?.emit('delivered');
      if (options.sendMs) await new Promise((resolve) => setTimeout(resolve, options.sendMs!()));
      return { replyId: message.id, chunks: 1, sent: 1, skipped: 0, plainFallbacks: 0, messageIds: ['1'] };
    },
  };
  return { delivery, calls, delivered, messages };
}
