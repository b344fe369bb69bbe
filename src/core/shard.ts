/**
 * Which queue shard a session belongs to: a pure, stable function of the session id, so every
 * process (gateways, workers, the CLI) agrees without talking to each other.
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** 32-bit FNV-1a hash of the UTF-8 bytes of `text` (unsigned). */
export function fnv1a32(text: string): number {
  let hash = FNV_OFFSET;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return hash >>> 0;
}

/**
 * The shard (0 … `shards` − 1) of session `sessionId`: FNV-1a of the id modulo the shard count.
 * @throws RangeError when `shards` is not a positive integer.
 */
export function shardOf(sessionId: string, shards: number): number {
  if (!Number.isInteger(shards) || shards < 1) throw new RangeError(`shard count must be a positive integer (got ${shards})`);
  return shards === 1 ? 0 : fnv1a32(sessionId) % shards;
}
