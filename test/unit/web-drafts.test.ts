import { describe, expect, it } from 'vitest';
import { DraftHub, type DraftDelta } from '../../channels/web/drafts.js';

describe('DraftHub.follow (the deltas one SSE stream sends)', () => {
  it('starts a stream that joins mid-reply at seq 0 with the text so far, and continues from it', () => {
    const hub = new DraftHub();
    hub.update('c', { streamId: 's', seq: 0, text: 'It' });
    hub.update('c', { streamId: 's', seq: 1, text: ' is' });
    hub.update('c', { streamId: 's', seq: 2, text: ' four' });
    const seen: DraftDelta[] = [];
    const stop = hub.follow('c', (delta) => seen.push(delta));
    hub.update('c', { streamId: 's', seq: 3, text: ' (4)' });
    hub.update('c', { streamId: 's', seq: 4, text: '.' });
    expect(seen).toEqual([
      { streamId: 's', seq: 0, text: 'It is four' },
      { streamId: 's', seq: 1, text: ' (4)' },
      { streamId: 's', seq: 2, text: '.' },
    ]);
    stop();
  });

  it('passes a restart (seq 0) and a new reply on with their own numbering', () => {
    const hub = new DraftHub();
    hub.update('c', { streamId: 's', seq: 0, text: 'a' });
    hub.update('c', { streamId: 's', seq: 1, text: 'b' });
    const seen: DraftDelta[] = [];
    const stop = hub.follow('c', (delta) => seen.push(delta));
    hub.update('c', { streamId: 's', seq: 0, text: 'x' });
    hub.update('c', { streamId: 's', seq: 1, text: 'y' });
    hub.update('c', { streamId: 't', seq: 0, text: 'n' });
    hub.update('c', { streamId: 't', seq: 1, text: 'm' });
    expect(seen.map((d) => `${d.streamId}${d.seq}:${d.text}`)).toEqual(['s0:ab', 's0:x', 's1:y', 't0:n', 't1:m']);
    stop();
    hub.update('c', { streamId: 't', seq: 2, text: 'o' });
    expect(seen).toHaveLength(5);
  });
});
