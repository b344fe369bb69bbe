/**
 * Buttons and edits in both web reply stores (memory and Redis): a reply keeps its choices for every
 * reader and `find`; an edit of a reply is stored once (a second edit answers nothing new), readers see
 * it as an `edits` entry, and the history shows the edited text without buttons.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { withNotices } from '../../channels/web/history.js';
import { createRedisReplyStore } from '../../channels/web/redis-replies.js';
import { createMemoryReplyStore, type ReplyStore } from '../../channels/web/reply-store.js';
import { createTestRedis } from '../helpers/redis.js';

const t = createTestRedis();
const stores: ReplyStore[] = [];
afterAll(async () => {
  for (const store of stores) store.closeAll();
  await t.cleanup();
});

const CHOICES = [{ label: 'Approve', command: '/approve abc234' }, { label: 'Deny', command: '/deny abc234' }];

describe.each([
  ['memory', () => createMemoryReplyStore()],
  ['redis', () => createRedisReplyStore({ redis: t.redis }, { keyPrefix: t.keyPrefix })],
] as const)('web reply choices (%s store)', (_name, create) => {
  it('keeps the choices, finds the reply, and stores one edit per reply', async () => {
    const store = create();
    stores.push(store);
    const question = await store.append('conv-q', 'Approve it?', 'markdown', { deliveryId: 'notice-1#0', choices: CHOICES });
    expect(question.choices).toEqual(CHOICES);
    expect((await store.find('conv-q', question.id))?.choices).toEqual(CHOICES);
    expect(await store.find('conv-q', 'web:conv-q:1-0')).toBeUndefined();
    expect(await store.find('other', question.id)).toBeUndefined();

    const edit = await store.append('conv-q', 'Approve it?\n\nApproved by Ann.', 'markdown', { edits: question.id });
    const second = await store.append('conv-q', 'Approve it?\n\nAlready decided', 'markdown', { edits: question.id });
    expect(second.id).toBe(edit.id);
    const { replies } = await store.read('conv-q', undefined, { timeoutMs: 0 });
    expect(replies.map((r) => [r.text, r.edits, r.choices])).toEqual([
      ['Approve it?', undefined, CHOICES],
      ['Approve it?\n\nApproved by Ann.', question.id, undefined],
    ]);
    const page = withNotices({ messages: [], before: null }, replies);
    expect(page.messages).toEqual([expect.objectContaining({ id: question.id, text: 'Approve it?\n\nApproved by Ann.' })]);
    expect(page.messages[0]!.choices).toBeUndefined();
  });
});
