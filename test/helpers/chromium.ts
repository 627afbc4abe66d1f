import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (`apt-get install -y chromium`): `npx playwright install` cannot download browsers here. */
const CHROMIUM = '/usr/bin/chromium';
// Playwright gives every launch a fresh temporary profile (its own --user-data-dir).
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** The browser the browser tests drive; close it in afterAll. */
export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 60_000 });
