import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TELEGRAM_HTML_TAGS, escapeHtml, markdownToTelegramHtml } from '../../src/core/markdown.js';

/** Parses the converter's output: tags must nest properly and be allowed; text must not hold raw `<` or `&`. */
function checkTelegramHtml(html: string): void {
  const stack: string[] = [];
  const tagRe = /<(\/?)([a-z-]+)((?:\s+[a-z]+="[^"<>]*")*)>/g;
  let last = 0;
  for (let match = tagRe.exec(html); match; match = tagRe.exec(html)) {
    assertText(html.slice(last, match.index));
    last = tagRe.lastIndex;
    const [, closing, name] = match;
    expect(TELEGRAM_HTML_TAGS as readonly string[]).toContain(name);
    if (closing) expect(stack.pop()).toBe(name);
    else stack.push(name);
  }
  assertText(html.slice(last));
  expect(stack).toEqual([]);
}

function assertText(text: string): void {
  expect(text).not.toMatch(/[<>]/);
  expect(text.replace(/&(amp|lt|gt|quot);/g, '')).not.toContain('&');
}

/** Strips tags and unescapes entities: the text a Telegram user would see. */
const visibleText = (html: string): string =>
  html.replace(/<[^>]+>/g, '').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&');

describe('escapeHtml', () => {
  it('escapes &, < and >', () => {
    expect(escapeHtml('a < b && c > d')).toBe('a &lt; b &amp;&amp; c &gt; d');
  });
});

describe('markdownToTelegramHtml', () => {
  it.each([
    ['plain text', 'hello world', 'hello world'],
    ['html-looking text', '<b>not bold</b> & co', '&lt;b&gt;not bold&lt;/b&gt; &amp; co'],
    ['bold', 'a **bold** word', 'a <b>bold</b> word'],
    ['bold underscores', '__bold__', '<b>bold</b>'],
    ['italic star', 'an *italic* word', 'an <i>italic</i> word'],
    ['italic underscore', 'an _italic_ word', 'an <i>italic</i> word'],
    ['snake_case stays', 'call my_func_name now', 'call my_func_name now'],
    ['strike', '~~gone~~', '<s>gone</s>'],
    ['spoiler', '||secret||', '<tg-spoiler>secret</tg-spoiler>'],
    ['nested', '**bold _and italic_**', '<b>bold <i>and italic</i></b>'],
    ['overlapping markers stay well-formed', '**bold *and italic***', '<b>bold *and italic</b>*'],
    ['inline code', 'run `a < b && c`', 'run <code>a &lt; b &amp;&amp; c</code>'],
    ['code keeps markers', '`**not bold**`', '<code>**not bold**</code>'],
    ['double-tick code', '``a ` b``', '<code>a ` b</code>'],
    ['link', 'see [the docs](https://example.com/a?b=1&c="2")', 'see <a href="https://example.com/a?b=1&amp;c=&quot;2&quot;">the docs</a>'],
    ['javascript link stays text', '[x](javascript:alert(1))', '[x](javascript:alert(1))'],
    ['unclosed markers stay literal', '2 * 3 = 6 and a_b', '2 * 3 = 6 and a_b'],
    ['lone star', '*', '*'],
    ['space after marker', '** not bold**', '** not bold**'],
    ['heading', '## Title *x*', '<b>Title <i>x</i></b>'],
    ['bullets', '- one\n  * two', '• one\n  • two'],
    ['rule stays', '---', '---'],
    ['quote', '> quoted <text>\n> more', '<blockquote>quoted &lt;text&gt;\nmore</blockquote>'],
    ['code block', '```ts\nconst a = 1 < 2;\n```', '<pre><code class="language-ts">const a = 1 &lt; 2;</code></pre>'],
    ['code block without language', '```\n**x**\n```\nafter', '<pre><code>**x**</code></pre>\nafter'],
    ['unclosed code block', '```py\nprint(1)', '<pre><code class="language-py">print(1)</code></pre>'],
    ['emphasis does not cross lines', '*a\nb*', '*a\nb*'],
  ])('%s', (_name, markdown, html) => {
    expect(markdownToTelegramHtml(markdown)).toBe(html);
  });

  it('always produces well-formed Telegram HTML', () => {
    const piece = fc.oneof(
      fc.constantFrom('*', '**', '_', '__', '~~', '||', '`', '```', '[', ']', '(', ')', '<', '>', '&', '"', '\n', ' ', '# ', '> ', '- '),
      fc.constantFrom('https://x.y/?a=1&b=2', 'word', 'snake_case', '😀', 'é'),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }).map((parts) => parts.join('')), (markdown) => {
        checkTelegramHtml(markdownToTelegramHtml(markdown));
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps every character of plain prose visible', () => {
    fc.assert(
      // Starts with a letter so that no line is a quote, heading or list item.
      fc.property(fc.stringMatching(/^[a-z][a-zA-Z0-9 .,;:!?<>&"'()-]{0,80}$/), (text) => {
        expect(visibleText(markdownToTelegramHtml(text))).toBe(text);
      }),
    );
  });
});
