import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (installed by .ci/run); Playwright's own browser download does not work here. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Launches headless Debian Chromium with the flags this machine needs (no sandbox as root, no background networking). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}
