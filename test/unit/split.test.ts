import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MIN_SPLIT_LIMIT, measureText, planChunks, splitChunks, splitMessage, type SplitChunk } from '../../src/core/split.js';
import { markdownToTelegramHtml } from '../../src/core/markdown.js';
import { toWellFormedText } from '../../src/core/text.js';

/** Undoes what the splitter added around a chunk (a reopened fence line, a closing fence). */
function unfence(chunk: SplitChunk): string {
  let text = chunk.text;
  if (chunk.reopenedFence !== undefined) text = text.slice(chunk.reopenedFence.length + 1);
  if (chunk.closedFence !== undefined) text = text.slice(0, text.length - chunk.closedFence.length - 1);
  return text;
}

const stripWhitespace = (text: string): string => text.replace(/\s+/g, '');
const fenceLines = (text: string): number => text.split('\n').filter((line) => /^```/.test(line)).length;

describe('measureText', () => {
  it.each([
    ['abc', 'utf16', 3],
    ['😀', 'utf16', 2],
    ['😀', 'codepoints', 1],
    ['a😀b', 'codepoints', 3],
    ['', 'codepoints', 0],
  ] as const)('measures %j in %s as %i', (text, unit, expected) => {
    expect(measureText(text, unit)).toBe(expected);
  });
});

describe('splitMessage', () => {
  it('returns a short text unchanged', () => {
    expect(splitMessage('hello\nworld', { limit: 100 })).toEqual(['hello\nworld']);
  });

  it('drops whitespace-only input', () => {
    expect(splitMessage('  \n\n ', { limit: 100 })).toEqual([]);
  });

  it('splits at line boundaries first', () => {
    const text = ['a'.repeat(20), 'b'.repeat(20), 'c'.repeat(20)].join('\n');
    expect(splitMessage(text, { limit: 45 })).toEqual([`${'a'.repeat(20)}\n${'b'.repeat(20)}`, 'c'.repeat(20)]);
  });

  it('splits a long line at a word boundary', () => {
    const text = 'alpha beta gamma delta epsilon zeta eta theta iota kappa';
    const chunks = splitMessage(text, { limit: 32 });
    expect(chunks).toEqual(['alpha beta gamma delta epsilon', 'zeta eta theta iota kappa']);
  });

  it('hard-cuts a word longer than the limit', () => {
    expect(splitMessage('x'.repeat(70), { limit: 32 })).toEqual(['x'.repeat(32), 'x'.repeat(32), 'x'.repeat(6)]);
  });

  it('never cuts a surrogate pair', () => {
    const text = '😀'.repeat(40);
    const chunks = splitMessage(text, { limit: 33, unit: 'utf16' });
    expect(chunks.join('')).toBe(text);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(33);
      expect(chunk).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
    }
  });

  it('counts code points for Discord', () => {
    const text = '😀'.repeat(40);
    expect(splitMessage(text, { limit: 40, unit: 'codepoints' })).toEqual([text]);
    expect(splitMessage(text, { limit: 40, unit: 'utf16' })).toHaveLength(2);
  });

  it('closes and reopens a code block cut in two', () => {
    const code = Array.from({ length: 8 }, (_, i) => `line ${i} of code`).join('\n');
    const chunks = splitChunks(`Intro\n\`\`\`ts\n${code}\n\`\`\`\nOutro`, { limit: 80 });
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks[0].text.endsWith('\n```')).toBe(true);
    expect(chunks[0].closedFence).toBe('```');
    expect(chunks[1].text.startsWith('```ts\n')).toBe(true);
    expect(chunks[1].reopenedFence).toBe('```ts');
    for (const chunk of chunks) expect(fenceLines(chunk.text) % 2).toBe(0);
  });

  it('keeps tilde fences and longer backtick fences intact', () => {
    const text = `~~~~\n${'x '.repeat(60)}\n~~~~`;
    for (const chunk of splitMessage(text, { limit: 40 })) {
      expect(chunk.startsWith('~~~~')).toBe(true);
      expect(chunk.endsWith('~~~~')).toBe(true);
    }
  });

  it('rejects a limit too small to hold a fence', () => {
    expect(() => splitMessage('x', { limit: MIN_SPLIT_LIMIT - 1 })).toThrow(RangeError);
  });

  it('splits a 10 000-character reply for Telegram into chunks of at most 4096', () => {
    const text = Array.from({ length: 400 }, (_, i) => `Paragraph ${i}: lorem ipsum dolor.`).join('\n');
    const chunks = splitMessage(text, { limit: 4096 });
    expect(chunks.length).toBe(Math.ceil(text.length / 4096));
    expect(chunks.join('\n')).toBe(text);
  });
});

const word = fc.oneof(fc.stringMatching(/^[a-z0-9😀é]{1,12}$/u), fc.array(fc.constantFrom('a', 'b', '\uD83D', '\uDE00'), { minLength: 1, maxLength: 6 }).map((cs) => cs.join('')));
const proseLine = fc.array(word, { minLength: 0, maxLength: 30 }).map((words) => words.join(' '));
const longWord = fc.stringMatching(/^[a-z]{40,120}$/);
const codeBlock = fc
  .tuple(fc.constantFrom('', 'ts', 'python'), fc.array(fc.oneof(proseLine, longWord), { minLength: 0, maxLength: 12 }))
  .map(([lang, lines]) => ['```' + lang, ...lines, '```'].join('\n'));
const markdownText = fc
  .array(fc.oneof({ weight: 4, arbitrary: proseLine }, { weight: 2, arbitrary: codeBlock }, { weight: 1, arbitrary: longWord }), {
    minLength: 1,
    maxLength: 25,
  })
  .map((blocks) => blocks.join('\n'));

describe('splitChunks properties (of the text made well-formed)', () => {
  it.each(['utf16', 'codepoints'] as const)('every chunk fits, fences balance and no text is lost (%s)', (unit) => {
    fc.assert(
      fc.property(markdownText, fc.integer({ min: MIN_SPLIT_LIMIT, max: 400 }), (raw, limit) => {
        const text = toWellFormedText(raw); // what the splitter cuts: half an emoji is U+FFFD
        const chunks = splitChunks(raw, { limit, unit });
        for (const chunk of chunks) {
          expect(measureText(chunk.text, unit)).toBeLessThanOrEqual(limit);
          expect(fenceLines(chunk.text) % 2).toBe(0);
          expect(chunk.text.trim()).not.toBe('');
        }
        expect(stripWhitespace(chunks.map(unfence).join(''))).toBe(stripWhitespace(text));
        // Stronger: each chunk is a verbatim slice of the text, in order, and only whitespace lies between.
        let cursor = 0;
        for (const chunk of chunks) {
          const body = unfence(chunk);
          const at = text.indexOf(body, cursor);
          expect(at).toBeGreaterThanOrEqual(cursor);
          expect(text.slice(cursor, at).trim()).toBe('');
          cursor = at + body.length;
        }
        expect(text.slice(cursor).trim()).toBe('');
      }),
      { numRuns: 300 },
    );
  });

  it('a text that fits is one unchanged chunk', () => {
    fc.assert(
      fc.property(markdownText, (text) => {
        fc.pre(text.trim() !== '' && text.length <= 4096);
        expect(splitMessage(text, { limit: 4096 })).toEqual([toWellFormedText(text)]);
      }),
    );
  });
});

describe('planChunks', () => {
  it('re-splits a chunk whose HTML rendering outgrows the limit', () => {
    const text = '<&>'.repeat(100);
    const planned = planChunks(text, { limit: 200, render: markdownToTelegramHtml });
    expect(planned.length).toBeGreaterThan(1);
    for (const chunk of planned) {
      expect(chunk.formatted).toBeDefined();
      expect(chunk.formatted!.length).toBeLessThanOrEqual(200);
    }
    expect(planned.map((chunk) => chunk.plain).join('')).toBe(text);
  });

  it('keeps rendered chunks within the limit for arbitrary Markdown', () => {
    fc.assert(
      fc.property(markdownText, fc.integer({ min: 64, max: 500 }), (text, limit) => {
        for (const chunk of planChunks(text, { limit, render: markdownToTelegramHtml })) {
          expect(chunk.plain.length).toBeLessThanOrEqual(limit);
          if (chunk.formatted !== undefined) expect(chunk.formatted.length).toBeLessThanOrEqual(limit);
        }
      }),
      { numRuns: 200 },
    );
  });
});
