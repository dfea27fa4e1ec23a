import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shot, signIn, startConsoleEnv, type ConsoleEnv } from './browser.js';

/** The console's sign-in, its keyboard and screen-reader basics, and a phone's width. */
let env: ConsoleEnv;
beforeAll(async () => { env = await startConsoleEnv(); });
afterAll(async () => { await env?.close(); });

describe('console sign-in', () => {
  it('shows the API\'s refusal for a bad secret and signs in with the right one', async () => {
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(env.url);
    await page.getByLabel('Application id').fill(env.appId);
    await page.getByLabel('Secret').fill('not-the-secret');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent(), { timeout: 15_000 }).toMatch(/Sign-in refused: .+ \(401\)/);
    await shot(page, 'signin-refused');
    expect(await page.locator('#main').isHidden()).toBe(true);

    await page.getByLabel('Secret').fill(env.secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#main').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await page.locator('#who').textContent()).toContain(env.appId);
    // Kept for the tab only: sessionStorage, not localStorage or a cookie.
    expect(await page.evaluate(() => [localStorage.length, document.cookie, !!sessionStorage.getItem('drivewire.console.credentials')]))
      .toEqual([0, '', true]);
    await expect.poll(() => page.locator('#stream-state').textContent(), { timeout: 15_000 }).toBe('stream: live');
    await page.close();
  });

  it('is usable from the keyboard: Tab reaches the fields and the button in order, and every control has a label', async () => {
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(env.url);
    await page.locator('#app-id').waitFor();
    const order: string[] = [];
    const outlines: string[] = [];
    for (let i = 0; i < 4; i++) {
      order.push(await page.evaluate(() => document.activeElement?.id ?? ''));
      // Focus is visible: the focused control draws an outline (:focus-visible).
      outlines.push(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle));
      await page.keyboard.press('Tab');
    }
    expect(order).toEqual(['app-id', 'app-secret', 'app-token', 'signin-submit']);
    expect(outlines.slice(1)).toEqual(['solid', 'solid', 'solid']);
    // Sign in with the keyboard only.
    await page.locator('#app-id').focus();
    await page.keyboard.type(env.appId);
    await page.keyboard.press('Tab');
    await page.keyboard.type(env.secret);
    await page.keyboard.press('Enter');
    await page.locator('#main').waitFor({ state: 'visible', timeout: 20_000 });
    for (const tab of ['Runs', 'Trips', 'Rules & events', 'Device details']) {
      await page.getByRole('tab', { name: tab }).click();
      const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')]
        .filter((el) => (el as HTMLElement).offsetParent !== null)
        .filter((el) => !(el as HTMLInputElement).labels?.length && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
        .map((el) => el.outerHTML));
      expect(unlabelled, tab).toEqual([]);
    }
    await page.close();
  });

  it('fits a phone\'s width (375 px) without horizontal scrolling', async () => {
    const page = await env.browser.newPage({ viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    await page.goto(env.url);
    await shot(page, 'phone-signin');
    await signIn(page, env);
    await page.getByRole('tab', { name: 'Runs' }).click();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    const map = await page.locator('#map').boundingBox();
    expect(map!.width).toBeGreaterThan(350);
    await shot(page, 'phone-runs');
    await page.close();
  });
});
