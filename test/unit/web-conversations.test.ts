import { describe, expect, it } from 'vitest';
import { createConversationStore } from '../../channels/web/conversations.js';

describe('web conversation store', () => {
  it('a conversation evicted from memory and started again never reuses a seq an open page has seen', () => {
    const store = createConversationStore({ maxConversations: 1 });
    store.append('a', 'first', 'text');
    const seen = store.append('a', 'second', 'text');
    store.append('b', 'other', 'text'); // evicts 'a' (no listener holds it)
    expect(store.repliesAfter('a', { epoch: store.epoch, seq: 0 })).toEqual([]);
    const next = store.append('a', 'after eviction', 'text');
    expect(next.seq).toBeGreaterThan(seen.seq);
    expect(next.id).not.toBe(seen.id);
    // The open page resumes from the cursor it held: the new reply is not skipped as already seen.
    const cursor = { epoch: store.epoch, seq: seen.seq };
    expect(store.repliesAfter('a', cursor).map((r) => r.text)).toEqual(['after eviction']);
    expect(store.cursorAfter(cursor, store.repliesAfter('a', cursor))).toBe(`${store.epoch}:${next.seq}`);
  });

  it('seq increases within a conversation and across conversations', () => {
    const store = createConversationStore();
    const seqs = ['a', 'b', 'a', 'c', 'a'].map((id) => store.append(id, 'x', 'text').seq);
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
    expect(store.repliesAfter('a', { seq: 1 }).map((r) => r.seq)).toEqual([3, 5]);
  });
});
