/**
 * The Content-Security-Policy of the monitor's own pages (the dashboard, the overview): one inline
 * script each, allowed by its hash. Those pages show what others wrote (user names, tool results
 * fetched from the web, pinned facts), and the monitor's origin can act (bull-board): should a
 * value ever reach the page as markup, no script of it runs, and no other site may frame the page.
 */
import { createHash } from 'node:crypto';

/** The CSP of `html`, a page of ours: its inline `<script>` blocks by hash, inline styles, fetches to this origin. */
export function monitorPageCsp(html: string): string {
  const hashes = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => `'sha256-${createHash('sha256').update(match[1]!).digest('base64')}'`);
  return `default-src 'none'; script-src ${hashes.join(' ') || "'none'"}; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
}

/** Headers of a monitor page: its CSP, and no MIME sniffing. */
export function monitorPageHeaders(html: string): Record<string, string> {
  return { 'Content-Security-Policy': monitorPageCsp(html), 'X-Content-Type-Options': 'nosniff' };
}
