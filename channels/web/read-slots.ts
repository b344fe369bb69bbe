/**
 * Reply reads (event streams and long polls) held open per client address. A read passes no rate
 * limit and holds memory until it ends (about 40 KB for an event stream), so one address holds at
 * most a few at once: a page needs one per tab.
 */
import type { Context } from 'hono';
import { clientAddressOf } from './post-message.js';

/** How long a client refused for too many reads is asked to wait, seconds. */
const TOO_MANY_READS_RETRY_AFTER_S = 5;

/** The read slots of every client address. */
export interface ReadSlots {
  /**
   * Takes a slot for the read `c` starts. @returns its release (call it once the read ended; a
   * second call does nothing), or the 429 answer (`refused: too_many_reads`, Retry-After) when the
   * client holds `maxPerClient` already. A request without a known address is not counted.
   */
  take(c: Context): (() => void) | Response;
}

/** Read slots of at most `maxPerClient` open reads per client address. */
export function createReadSlots(maxPerClient: number): ReadSlots {
  const open = new Map<string, number>();
  return {
    take(c) {
      const address = clientAddressOf(c);
      if (address === undefined) return () => undefined;
      const held = open.get(address) ?? 0;
      if (held >= maxPerClient) {
        c.header('Retry-After', String(TOO_MANY_READS_RETRY_AFTER_S));
        return c.json({ error: `this address holds ${maxPerClient} open reads (event streams, long polls) already; close one or wait`, refused: 'too_many_reads' }, 429);
      }
      open.set(address, held + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (open.get(address) ?? 1) - 1;
        if (left > 0) open.set(address, left);
        else open.delete(address);
      };
    },
  };
}
