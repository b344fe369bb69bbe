import { inject } from 'vitest';
import { chromium, type Browser, type BrowserServer, type Page } from 'playwright-core';

/** Debian's Chromium (installed by .ci/run); Playwright's own browser download does not work here. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

const LAUNCH_OPTIONS = {
  executablePath: CHROMIUM_PATH,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
};

/** Launches headless Debian Chromium with the flags this machine needs (no sandbox as root, no background networking) as a server tests connect to. */
export function launchChromiumServer(): Promise<BrowserServer> {
  return chromium.launchServer(LAUNCH_OPTIONS);
}

/**
 * A browser for one test file: a connection to the run's shared Chromium (test/browser-setup.ts)
 * when there is one, else a Chromium of its own. Its `close()` closes the contexts the file opened
 * (and the browser, when it is the file's own).
 */
export function launchChromium(): Promise<Browser> {
  const wsEndpoint = inject('chromiumWsEndpoint');
  return wsEndpoint ? chromium.connect(wsEndpoint) : chromium.launch(LAUNCH_OPTIONS);
}

/** Opens `url` (a web chat page) in a new page of `browser` and resolves once the page says it is connected. */
export async function openChat(browser: Browser, url: string, viewport = { width: 900, height: 700 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  await page.goto(url);
  await page.locator('#status[data-state="connected"]').waitFor();
  return page;
}

/** Types `text` into a web chat page's input and sends it with Enter. */
export async function sendChat(page: Page, text: string): Promise<void> {
  await page.fill('#input', text);
  await page.keyboard.press('Enter');
}
