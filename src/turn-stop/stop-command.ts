/** The gateway's side of `/stop`: the chat command that records a stop request and wakes the workers. */
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { sessionKeys } from '../redis/keys.js';
import { requestStop } from './stop-requests.js';

/** `/stop` with nothing running. */
export const NOTHING_TO_STOP = 'Nothing is running right now, so there is nothing to stop.';

/**
 * A message in `interrupt` busy mode arrived: stops the session's running turn as `/stop` does,
 * unless that turn already took the message (its answer is the one the user waits for).
 * @returns whether a running turn was asked to stop.
 */
export async function interruptTurn(redis: RedisClient, sessionId: string, keyPrefix: string, messageId: string, log?: Logger): Promise<boolean> {
  const found = await requestStop(redis, sessionId, sessionKeys(sessionId, keyPrefix), { keyPrefix, interrupt: messageId });
  if (found.state === 'running') log?.info({ sessionId, fence: found.fence }, 'turn interrupted by a new message');
  return found.state === 'running';
}

/**
 * `/stop`: records a stop request for the running (or next) turn and wakes the workers.
 * @returns null when a turn will answer "Stopped.", else the answer that nothing runs.
 */
export async function stopTurn(redis: RedisClient, sessionId: string, keyPrefix: string, log?: Logger): Promise<string | null> {
  const found = await requestStop(redis, sessionId, sessionKeys(sessionId, keyPrefix), { keyPrefix });
  log?.info({ sessionId, found: found.state, ...(found.state === 'running' ? { fence: found.fence } : {}) }, 'stop requested');
  return found.state === 'idle' ? NOTHING_TO_STOP : null;
}
