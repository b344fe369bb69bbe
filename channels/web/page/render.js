// Renders a message into a bubble: Markdown through marked, then DOMPurify, into DOM nodes.
// Raw HTML in the model's text is shown as text (never parsed); images become links (a remote
// image would load on sight: a way to leak the conversation); links open in a new tab without an
// opener; only the tags Markdown produces survive, without class, id or style, so the model's text
// cannot imitate the page's own markup. The page's CSP forbids inline script besides.
import { Marked } from './vendor/marked.js';
import DOMPurify from './vendor/purify.js';

const ALLOWED_TAGS = ['a', 'p', 'br', 'hr', 'strong', 'em', 'del', 's', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'input'];
const ALLOWED_ATTR = ['href', 'title', 'align', 'start', 'type', 'checked', 'disabled'];

const escapeHtml = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    image: ({ href, text }) => `<a href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>`,
  },
});

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    if (node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
  } else if (node.tagName === 'INPUT') {
    // Task-list boxes only, and read-only.
    if (node.getAttribute('type') !== 'checkbox') node.remove();
    else node.setAttribute('disabled', '');
  }
});

/** Puts the message into `el`: Markdown rendered and sanitised, or plain text. */
export function renderInto(el, text, format) {
  el.replaceChildren();
  if (format !== 'markdown') {
    el.textContent = text;
    return;
  }
  const html = marked.parse(text, { async: false }).trim();
  const fragment = DOMPurify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, ADD_ATTR: ['target'], ALLOW_DATA_ATTR: false, RETURN_DOM_FRAGMENT: true });
  el.appendChild(fragment);
  for (const pre of el.querySelectorAll('pre')) addCopyButton(pre);
}

/** A copy button over a code block (its label comes from CSS, so the message's text stays the code). */
function addCopyButton(pre) {
  const wrap = document.createElement('div');
  wrap.className = 'code';
  pre.replaceWith(wrap);
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'copy';
  button.setAttribute('aria-label', 'Copy code');
  button.addEventListener('click', () => copyText(pre.textContent ?? '', button));
  wrap.append(button, pre);
}

async function copyText(text, button) {
  try {
    if (navigator.clipboard && window.isSecureContext) await navigator.clipboard.writeText(text);
    else fallbackCopy(text);
    flash(button, 'copied');
  } catch {
    flash(button, 'copy-failed');
  }
}

/** Without the Clipboard API (a page over plain http off localhost): a hidden textarea and execCommand. */
function fallbackCopy(text) {
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('copy refused');
}

function flash(button, className) {
  button.classList.add(className);
  setTimeout(() => button.classList.remove(className), 1500);
}
