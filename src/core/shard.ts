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

/** Slots of a Redis Cluster. */
export const CLUSTER_SLOTS = 16_384;

/** CRC16-XMODEM of the UTF-8 bytes of `text`: Redis Cluster's key hash. */
export function crc16(text: string): number {
  let crc = 0;
  for (const byte of new TextEncoder().encode(text)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The Redis Cluster slot of hash tag `tag` (the text between a key's first `{` and `}`). */
export function tagSlot(tag: string): number {
  return crc16(tag) % CLUSTER_SLOTS;
}

/**
 * The hash tag of shard `shard` of `shards`, from the prefix's tag `base`: `<base>-<shard>-<salt>`
 * with the smallest salt that puts its slot in the shard's equal share of the slot space
 * (`[shard, shard + 1) × 16384 / shards`). A cluster whose masters hold equal contiguous slot
 * ranges (what `redis-cli --cluster create` makes) then gets an even share of the shards when the
 * shard count is a multiple of the master count; a plain `{cgq-3}` lands wherever CRC16 puts it.
 */
export function shardTag(base: string, shard: number, shards: number): string {
  const low = Math.ceil((shard * CLUSTER_SLOTS) / shards);
  const high = Math.ceil(((shard + 1) * CLUSTER_SLOTS) / shards);
  for (let salt = 0; ; salt++) {
    const tag = `${base}-${shard}-${salt}`;
    const slot = tagSlot(tag);
    if (slot >= low && slot < high) return tag;
  }
}
