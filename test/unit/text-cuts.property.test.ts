/**
 * Lone surrogates and emoji at every cut: text made well-formed at the adapters, and every cut
 * (names, excerpts, reply chunks) on a code-point boundary — on a grapheme boundary where one is near.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toWellFormedInbound, type InboundMessage } from '../../src/core/inbound.js';
import { splitMessage } from '../../src/core/split.js';
import { excerptAround, isWellFormedText, toWellFormedText, truncateText } from '../../src/core/text.js';
import { toInboundMessage } from '../../channels/telegram/translate.js';

const LONE_HIGH = '\ud83d';
const LONE_LOW = '\ude00';
const FAMILY = '👨‍👩‍👧‍👦';
const FLAG = '🇫🇷';

/** Strings mixing ASCII, emoji (pairs), ZWJ families, flags, combining marks and lone surrogates. */
const piece = fc.oneof(
  fc.constantFrom('a', 'b', ' ', '\n', 'é', 'e\u0301', '😀', '👍🏽', FAMILY, FLAG, LONE_HIGH, LONE_LOW),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)),
  fc.string({ unit: 'binary', maxLength: 4 }),
);
const messy = fc.array(piece, { maxLength: 60 }).map((parts) => parts.join(''));
const wellFormed = messy.map(toWellFormedText);

const codePoints = (text: string): number => [...text].length;

describe('toWellFormedText', () => {
  it('replaces every lone surrogate with U+FFFD and keeps everything else', () => {
    expect(toWellFormedText(`a${LONE_HIGH}b${LONE_LOW}😀`)).toBe('a\ufffdb\ufffd😀');
    fc.assert(fc.property(messy, (text) => {
      const fixed = toWellFormedText(text);
      expect(isWellFormedText(fixed)).toBe(true);
      expect(fixed.length).toBe(text.length);
      expect(JSON.stringify(fixed)).not.toMatch(/\\ud[89a-f]/i); // what Redis's cjson rejects
      if (isWellFormedText(text)) expect(fixed).toBe(text);
    }));
  });

  it('is applied to every string of an inbound message, attachments included', () => {
    const message: InboundMessage = {
      id: 'web:c:1', channel: 'web', chatId: 'c', userId: 'u', userName: `Ada ${LONE_HIGH}`, text: `half ${LONE_LOW} an emoji`,
      attachments: [{ kind: 'document', ref: 'r', fileName: `f${LONE_HIGH}.txt` }], receivedAt: 1,
    };
    const fixed = toWellFormedInbound(message);
    expect(fixed).toMatchObject({ userName: 'Ada \ufffd', text: 'half \ufffd an emoji', attachments: [{ fileName: 'f\ufffd.txt' }] });
  });

  it('returns a well-formed message itself (no copy)', () => {
    const message: InboundMessage = { id: 'web:c:2', channel: 'web', chatId: 'c', userId: 'u', userName: 'Ada 😀', text: 'fine', attachments: [{ kind: 'document', ref: 'r', fileName: 'f.txt' }], receivedAt: 1 };
    expect(toWellFormedInbound(message)).toBe(message);
    expect(toWellFormedInbound({ ...message, text: `x${LONE_LOW}` })).not.toBe(message);
  });

  it('is applied by the Telegram translation', () => {
    const bot = { id: 1, username: 'bot' };
    const out = toInboundMessage({
      message_id: 5, date: 1, chat: { id: 9, type: 'private', first_name: 'A' }, from: { id: 9, is_bot: false, first_name: `A${LONE_HIGH}` }, text: `hi ${LONE_LOW}`,
    } as never, bot, { groupTrigger: 'mention', receivedAt: 1 });
    expect(out).toMatchObject({ kind: 'message', message: { text: 'hi \ufffd', userName: 'A\ufffd' } });
  });
});

describe('truncateText', () => {
  it('never cuts an emoji, a flag or a ZWJ family in half', () => {
    expect(truncateText(`ab${'😀'.repeat(3)}`, 3)).toBe('ab😀');
    expect(truncateText(`${FLAG}${FLAG}`, 3)).toBe(FLAG);
    expect(truncateText(`x${FAMILY}`, 3)).toBe('x');
  });

  it('returns a well-formed prefix of at most `max` code points, at every length', () => {
    fc.assert(fc.property(wellFormed, fc.integer({ min: 0, max: 70 }), (text, max) => {
      const cut = truncateText(text, max);
      expect(text.startsWith(cut)).toBe(true);
      expect(codePoints(cut)).toBeLessThanOrEqual(max);
      expect(isWellFormedText(cut)).toBe(true);
      if (codePoints(text) <= max) expect(cut).toBe(text);
    }));
  });
});

describe('excerptAround', () => {
  it('cuts a well-formed excerpt around the match, marked with ellipses', () => {
    const text = `${'😀'.repeat(300)} ORD-1 ${'🇫🇷'.repeat(300)}`;
    const excerpt = excerptAround(text, 'ord-1', 40);
    expect(excerpt).toContain('ORD-1');
    expect(excerpt.startsWith('…') && excerpt.endsWith('…')).toBe(true);
    expect(isWellFormedText(excerpt)).toBe(true);
    expect(excerpt.replace(/…/g, '')).toMatch(/^(😀)+ ORD-1 (🇫🇷)+$/);
  });

  it('is well-formed and bounded for any text and query', () => {
    fc.assert(fc.property(wellFormed, messy, fc.integer({ min: 1, max: 50 }), (text, query, max) => {
      const excerpt = excerptAround(text, query, max);
      expect(isWellFormedText(excerpt)).toBe(true);
      expect(codePoints(excerpt.replace(/^…|…$/g, ''))).toBeLessThanOrEqual(Math.max(max, codePoints(text) <= max ? codePoints(text) : 0));
      expect(text.includes(excerpt.replace(/^…|…$/g, ''))).toBe(true);
    }));
  });
});

describe('splitMessage at emoji', () => {
  it('keeps every chunk well-formed and never cuts a surrogate pair or a short grapheme', () => {
    fc.assert(fc.property(wellFormed, fc.integer({ min: 32, max: 60 }), fc.constantFrom('utf16' as const, 'codepoints' as const), (text, limit, unit) => {
      for (const chunk of splitMessage(text, { limit, unit })) {
        expect(isWellFormedText(chunk)).toBe(true);
        expect(chunk.startsWith('\u200d')).toBe(false); // a ZWJ family was not torn apart
        expect(/^[\udc00-\udfff]/.test(chunk) || /[\ud800-\udbff]$/.test(chunk)).toBe(false);
      }
    }));
    fc.assert(fc.property(messy, (text) => {
      for (const chunk of splitMessage(text, { limit: 40 })) expect(isWellFormedText(chunk)).toBe(true);
    }));
    const flags = FLAG.repeat(40);
    for (const chunk of splitMessage(flags, { limit: 33, unit: 'codepoints' })) expect(codePoints(chunk) % 2).toBe(0);
  });
});
