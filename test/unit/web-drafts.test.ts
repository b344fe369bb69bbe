import { describe, expect, it } from 'vitest';
import { DraftHub, type DraftDelta } from '../../channels/web/drafts.js';

describe('DraftHub.follow (the deltas one SSE stream sends)', () => {
  it('starts a stream that joins mid-reply at seq 0 with the text so far, and continues from it', () => {
    const hub = new DraftHub();
    hub.update('c', { liveReplyId: 's', seq: 0, text: 'It' });
    hub.update('c', { liveReplyId: 's', seq: 1, text: ' is' });
    hub.update('c', { liveReplyId: 's', seq: 2, text: ' four' });
    const seen: DraftDelta[] = [];
    const stop = hub.follow('c', (delta) => seen.push(delta));
    hub.update('c', { liveReplyId: 's', seq: 3, text: ' (4)' });
    hub.update('c', { liveReplyId: 's', seq: 4, text: '.' });
    expect(seen).toEqual([
      { liveReplyId: 's', seq: 0, text: 'It is four' },
      { liveReplyId: 's', seq: 1, text: ' (4)' },
      { liveReplyId: 's', seq: 2, text: '.' },
    ]);
    stop();
  });

  it('passes a restart (seq 0) and a new reply on with their own numbering', () => {
    const hub = new DraftHub();
    hub.update('c', { liveReplyId: 's', seq: 0, text: 'a' });
    hub.update('c', { liveReplyId: 's', seq: 1, text: 'b' });
    const seen: DraftDelta[] = [];
    const stop = hub.follow('c', (delta) => seen.push(delta));
    hub.update('c', { liveReplyId: 's', seq: 0, text: 'x' });
    hub.update('c', { liveReplyId: 's', seq: 1, text: 'y' });
    hub.update('c', { liveReplyId: 't', seq: 0, text: 'n' });
    hub.update('c', { liveReplyId: 't', seq: 1, text: 'm' });
    expect(seen.map((d) => `${d.liveReplyId}${d.seq}:${d.text}`)).toEqual(['s0:ab', 's0:x', 's1:y', 't0:n', 't1:m']);
    stop();
    hub.update('c', { liveReplyId: 't', seq: 2, text: 'o' });
    expect(seen).toHaveLength(5);
  });
});
