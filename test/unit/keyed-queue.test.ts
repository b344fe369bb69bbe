import { describe, expect, it } from 'vitest';
import { createKeyedQueue } from '../../src/outbound/consumer.js';

describe('createKeyedQueue', () => {
  it('runs the tasks of one key in submission order and other keys alongside', async () => {
    const queue = createKeyedQueue();
    const events: string[] = [];
    let releaseFirst!: () => void;
    const first = queue.run('chat-a', () => new Promise<void>((resolve) => {
      events.push('a1 start');
      releaseFirst = () => { events.push('a1 end'); resolve(); };
    }));
    const second = queue.run('chat-a', async () => { events.push('a2'); });
    const other = queue.run('chat-b', async () => { events.push('b1'); });
    await other;
    expect(events).toEqual(['a1 start', 'b1']);
    releaseFirst();
    await Promise.all([first, second]);
    expect(events).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
  });

  it('goes on with the next task of a key after one fails', async () => {
    const queue = createKeyedQueue();
    const failed = queue.run('k', async () => { throw new Error('boom'); });
    const next = queue.run('k', async () => 'ok');
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('ok');
  });
});
