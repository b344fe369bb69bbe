import { describe, expect, it } from 'vitest';
import { CLUSTER_SLOTS, crc16, fnv1a32, shardOf, tagSlot } from '../../src/core/shard.js';
import { resolveQueueNames, sessionShardPrefix, shardPrefix, shardPrefixes } from '../../src/queue/names.js';
import { consumedShards } from '../../workers/shard-workers.js';

describe('shardOf', () => {
  it('is 32-bit FNV-1a of the UTF-8 bytes', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
    // Non-ASCII ids hash their UTF-8 bytes, not UTF-16 units.
    expect(fnv1a32('é')).toBe(fnv1a32('\u00e9'));
    expect(fnv1a32('é')).not.toBe(fnv1a32('e'));
  });

  it('maps a session to the same shard every time, every shard in range, and spreads sessions evenly', () => {
    expect(shardOf('telegram:42', 1)).toBe(0);
    expect(shardOf('telegram:42', 12)).toBe(shardOf('telegram:42', 12));
    const counts = new Array<number>(12).fill(0);
    for (let i = 0; i < 12_000; i++) counts[shardOf(`telegram:${100_000 + i}`, 12)]! += 1;
    for (const n of counts) expect(n).toBeGreaterThan(800);
    for (const n of counts) expect(n).toBeLessThan(1200);
  });

  it('refuses a shard count that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => shardOf('web:a', bad)).toThrow(/positive integer/);
  });
});

describe('shard prefixes', () => {
  it('keeps one shard on the prefix of today, and puts the shard number inside the hash tag for more', () => {
    expect(shardPrefix('{cgq}', 0, 1)).toBe('{cgq}');
    const three = shardPrefixes({ queuePrefix: '{cgq}', queueShards: 3 });
    three.forEach((prefix, i) => expect(prefix).toMatch(new RegExp(`^\\{cgq-${i}-\\d+\\}$`)));
    expect(shardPrefix('app{cgq}x', 2, 4)).toMatch(/^app\{cgq-2-\d+\}x$/);
    expect(shardPrefix('cgq', 2, 4)).toBe('cgq-2');
    // An empty `{}` is no hash tag for Redis Cluster: the number is appended.
    expect(shardPrefix('{}cgq', 1, 2)).toBe('{}cgq-1');
    const names = resolveQueueNames({ queueShards: 8 });
    expect(sessionShardPrefix(names, 'web:abc')).toBe(shardPrefix('{cgq}', shardOf('web:abc', 8), 8));
  });

  it("spreads the shards' slots evenly: shard i of N in the i-th N-th of the slot space", () => {
    expect(crc16('123456789')).toBe(0x31c3);
    expect(tagSlot('foo')).toBe(12182);
    for (const shards of [2, 12, 48]) {
      shardPrefixes({ queuePrefix: '{cgq}', queueShards: shards }).forEach((prefix, i) => {
        const slot = tagSlot(prefix.slice(1, -1));
        expect(slot).toBeGreaterThanOrEqual(Math.ceil((i * CLUSTER_SLOTS) / shards));
        expect(slot).toBeLessThan(Math.ceil(((i + 1) * CLUSTER_SLOTS) / shards));
      });
    }
    // So three masters with equal slot ranges get 4 of 12 shards each.
    const perMaster = [0, 0, 0];
    for (const prefix of shardPrefixes({ queuePrefix: '{cgq}', queueShards: 12 })) perMaster[Math.floor((tagSlot(prefix.slice(1, -1)) * 3) / CLUSTER_SLOTS)]! += 1;
    expect(perMaster).toEqual([4, 4, 4]);
  });

  it('refuses a shard count out of range', () => {
    expect(() => resolveQueueNames({ queueShards: 0 })).toThrow(/queueShards/);
    expect(() => resolveQueueNames({ queueShards: 257 })).toThrow(/queueShards/);
  });
});

describe('consumedShards', () => {
  const names = resolveQueueNames({ queueShards: 4 });

  it('takes every shard by default and splits the concurrency over them, at least one each', () => {
    expect(consumedShards(names, undefined, 10).map((s) => [s.shard, s.concurrency])).toEqual([[0, 3], [1, 3], [2, 2], [3, 2]]);
    expect(consumedShards(names, [], 2).map((s) => s.concurrency)).toEqual([1, 1, 1, 1]);
  });

  it('takes only the listed shards, once each', () => {
    expect(consumedShards(names, [2, 0, 2], 4).map((s) => [s.shard, s.prefix, s.concurrency])).toEqual([[2, shardPrefix('{cgq}', 2, 4), 2], [0, shardPrefix('{cgq}', 0, 4), 2]]);
  });

  it('refuses a shard that does not exist, naming the count', () => {
    expect(() => consumedShards(names, [1, 4], 4)).toThrow(/shard\(s\) 4, but there are 4 shard\(s\)/);
  });
});
