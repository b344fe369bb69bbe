/**
 * The web chat page: an HTML shell (`page/index.html`), its stylesheet and ES modules (`page/*.js`),
 * and the Markdown renderer and sanitiser it bundles (marked and DOMPurify, served from
 * node_modules — no CDN). Every file is read once, when the channel is created. The routes: `GET /`
 * (to the chat), `GET /chat`, `GET /chat/assets/*`, and the favicon.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Hono, MiddlewareHandler } from 'hono';

/** Options of {@link renderChatPage}. */
export interface ChatPageOptions {
  /** Page title. Default `chatgate`. */
  title?: string;
  /** Path prefix the app is mounted under, e.g. `` (default) or `/gateway`. */
  basePath?: string;
}

/** A file the page loads, with its gzip form and entity tag (computed once). */
export interface ChatAsset {
  body: string;
  gzip: Buffer;
  etag: string;
  contentType: string;
}

const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'page');
const CLIENT_FILES = ['chat.js', 'choices.js', 'composer.js', 'connection.js', 'past-chats.js', 'render.js', 'timeline.js', 'chat.css'];
const JS = 'text/javascript; charset=utf-8';
/** What the page may load and run: its own files only (no inline script, no remote images). */
const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

let cache: { shell: string; assets: ReadonlyMap<string, ChatAsset>; favicon: string } | undefined;

/** Reads the page's files (once per process). @throws when a file is missing: the install is broken. */
export function loadChatFiles(): { shell: string; assets: ReadonlyMap<string, ChatAsset>; favicon: string } {
  if (cache) return cache;
  const require = createRequire(import.meta.url);
  const read = (path: string): string => readFileSync(path, 'utf8');
  const assets = new Map<string, ChatAsset>();
  for (const name of CLIENT_FILES) assets.set(name, toAsset(read(join(PAGE_DIR, name)), name.endsWith('.css') ? 'text/css; charset=utf-8' : JS));
  const markedDir = dirname(require.resolve('marked/package.json'));
  const purifyDir = dirname(require.resolve('dompurify'));
  assets.set('vendor/marked.js', toAsset(withoutSourceMap(read(join(markedDir, 'lib', 'marked.esm.js'))), JS));
  assets.set('vendor/purify.js', toAsset(withoutSourceMap(read(join(purifyDir, 'purify.es.mjs'))), JS));
  cache = { shell: read(join(PAGE_DIR, 'index.html')), assets, favicon: read(join(PAGE_DIR, 'favicon.svg')) };
  return cache;
}

/** Renders the chat page. Option values are escaped into the document. */
export function renderChatPage(options: ChatPageOptions = {}): string {
  const basePath = options.basePath ?? '';
  const config = JSON.stringify({ api: `${basePath}/api/chat/` }).replace(/</g, '\\u003c');
  const values: Record<string, string> = { title: escapeHtml(options.title ?? 'chatgate'), base: escapeHtml(basePath), assets: escapeHtml(`${basePath}/chat/assets`), config };
  return loadChatFiles().shell.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => values[name] ?? whole);
}

/**
 * Adds the page's routes to `app`: `/` redirects to `/chat` (keeping the query, so `/?token=` logs
 * in as `/chat?token=` does), `/chat` and its assets behind `guard`, the favicon open to all.
 */
export function mountChatPage(app: Hono, options: Required<ChatPageOptions>, guard?: MiddlewareHandler): void {
  const page = renderChatPage(options);
  const { assets, favicon } = loadChatFiles();
  if (guard) app.use('/chat/assets/*', guard);
  app.get('/', (c) => c.redirect(`${options.basePath}/chat${new URL(c.req.url).search}`, 302));
  app.get('/chat', (c) => {
    c.header('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    c.header('Cache-Control', 'no-cache');
    return c.html(page);
  });
  app.get('/chat/assets/*', (c) => {
    const name = c.req.path.slice(c.req.path.indexOf('/chat/assets/') + '/chat/assets/'.length);
    const asset = assets.get(name);
    if (!asset) return c.text('not found', 404);
    const headers: Record<string, string> = { 'Content-Type': asset.contentType, 'Cache-Control': 'no-cache', ETag: asset.etag, Vary: 'Accept-Encoding', 'X-Content-Type-Options': 'nosniff' };
    if (c.req.header('if-none-match') === asset.etag) return c.body(null, 304, headers);
    if (!/\bgzip\b/.test(c.req.header('accept-encoding') ?? '')) return c.body(asset.body, 200, headers);
    return c.body(new Uint8Array(asset.gzip), 200, { ...headers, 'Content-Encoding': 'gzip' });
  });
  const icon = (): Response => new Response(favicon, { headers: { 'Content-Type': 'image/svg+xml', 'Cache-Control': 'public, max-age=86400' } });
  app.get('/favicon.svg', icon);
  app.get('/favicon.ico', icon);
}

function toAsset(body: string, contentType: string): ChatAsset {
  return { body, gzip: gzipSync(body), etag: `"${createHash('sha1').update(body).digest('hex').slice(0, 20)}"`, contentType };
}

function withoutSourceMap(code: string): string {
  return code.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
