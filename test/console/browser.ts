import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startE2ePlatform, type E2ePlatform } from '../helpers/e2e.js';

export const OUTPUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'output');
/** Debian's chromium (`.ci/run` installs it when missing); CHROMIUM_PATH points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Tests run offline: a tile URL nothing listens on, so the map draws its vector layers on a blank background. */
export const NO_TILES = 'http://127.0.0.1:9/{z}/{x}/{y}.png';

export interface ConsoleEnv { e: E2ePlatform; browser: Browser; url: string; appId: string; secret: string; close(): Promise<void> }

export async function startConsoleEnv(config: Record<string, unknown> = {}, receiver = false): Promise<ConsoleEnv> {
  fs.mkdirSync(OUTPUT, { recursive: true });
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (as .ci/run does), or set CHROMIUM_PATH`);
  const [e, browser] = await Promise.all([
    startE2ePlatform({ receiver, config: { tileUrl: NO_TILES, ...config } }),
    chromium.launch({ executablePath: CHROMIUM, args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] }),
  ]);
  const app = e.p.credentials.application!;
  return {
    e, browser, url: `${e.p.apiUrl}/console/`, appId: app.id, secret: app.secret,
    async close() {
      await browser.close();
      await e.close();
    },
  };
}

export async function signIn(page: Page, env: ConsoleEnv): Promise<void> {
  await page.goto(env.url);
  await page.getByLabel('Application id').fill(env.appId);
  await page.getByLabel('Secret').fill(env.secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#main').waitFor({ state: 'visible', timeout: 20_000 });
}

export const shot = (page: Page, name: string) => page.screenshot({ path: path.join(OUTPUT, `${name}.png`) });
