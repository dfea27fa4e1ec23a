import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { createCommandResponder } from '../../simulator/device-commands.js';
import { openLink, type DeviceLink } from '../../simulator/device-link.js';
import { eventually } from '../helpers/gateway.js';
import { OUTPUT, signIn, startConsoleEnv, type ConsoleEnv } from './browser.js';

/**
 * The device panel's status and command box, in a real browser on the real platform, with a real device: the
 * simulator's own MQTT link and command responder (what a dummy answers), and a second device that never connects.
 */
let env: ConsoleEnv;
let link: DeviceLink;
let online: { id: string };
let parked: { id: string };
const VIN = 'VV1CONSOLE2CMD345';
const quiet = { debug: () => {}, warn: () => {} };

beforeAll(async () => {
  env = await startConsoleEnv();
  const a = await env.e.newDevice('Answering car');
  parked = (await env.e.newDevice('Parked car')).device;
  online = a.device;
  const responder = createCommandResponder({ vin: VIN, setIntervalMs: (ms) => ms, dtcs: () => [], clearDtcs: () => [] }, { log: quiet, deviceId: online.id });
  link = openLink({
    mqttUrl: env.e.mqttUrl, deviceId: online.id, secret: a.secret, reconnectPeriodMs: 1000, log: quiet,
    onCommand: (text) => {
      const answer = responder.answer(text);
      if (answer) void link.publish(`devices/${online.id}/responses`, answer.reply);
    },
  });
  await link.firstConnect(15_000, new AbortController().signal);
  await eventually(() => env.e.api('GET', `/api/v1/devices/${online.id}`), (r) => r.body.device.status?.online === true, 10_000);
}, 60_000);
afterAll(async () => {
  await link?.end(true);
  await env?.close();
});

async function pick(page: Page, deviceId: string): Promise<void> {
  await page.locator(`#device-select option[value="${deviceId}"]`).waitFor({ state: 'attached', timeout: 15_000 });
  await page.locator('#device-select').selectOption(deviceId);
}

const state = (page: Page) => page.locator('#command-current [data-state]').textContent();
const commandCount = async (deviceId: string) => (await env.e.api('GET', `/api/v1/devices/${deviceId}/commands?limit=100`)).body.commands.length;

describe('console command box', () => {
  it("shows an online device's status and sends request-vin until it succeeds with the VIN", async () => {
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(String(err)));
    await signIn(page, env);
    await pick(page, online.id);
    await expect.poll(() => page.locator('#device-status [data-presence]').textContent(), { timeout: 15_000 }).toBe('online');
    const status = await page.locator('#device-status').textContent();
    expect(status).toMatch(/Last seen(?!never)/);
    expect(status).toMatch(/Last connected(?!never)/);

    await page.getByLabel('Command', { exact: true }).selectOption('request-vin');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => state(page), { timeout: 20_000 }).toBe('succeeded');
    expect(await page.locator('#command-current').textContent()).toContain(`"vin": "${VIN}"`);
    await expect.poll(() => page.locator('#command-list li').first().textContent(), { timeout: 10_000 }).toMatch(/^request-vin succeeded/);
    const { body } = await env.e.api('GET', `/api/v1/devices/${online.id}/commands`);
    expect(body.commands.map((c: any) => [c.type, c.state, c.response])).toEqual([['request-vin', 'succeeded', { ok: true, result: { vin: VIN } }]]);
    expect(await page.getByRole('button', { name: 'Cancel command' }).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it("shows the API's 400 for a set-interval out of range and a JSON parse error for custom, sending nothing", async () => {
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    await signIn(page, env);
    await pick(page, online.id);
    const before = await commandCount(online.id);
    await page.getByLabel('Command', { exact: true }).selectOption('set-interval');
    await page.getByLabel('Interval (seconds, 1–3600)').fill('0');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.locator('#command-error').textContent(), { timeout: 10_000 })
      .toBe('Not sent: command.payload.seconds must be an integer from 1 to 3600');

    await page.getByLabel('Command', { exact: true }).selectOption('custom');
    expect(await page.getByLabel('Interval (seconds, 1–3600)').isVisible()).toBe(false);
    await page.getByLabel('Payload (a JSON object)').fill('{"mode": eco}');
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await page.locator('#command-error').textContent()).toMatch(/^The payload is not valid JSON \(.+\); nothing was sent\.$/);
    expect(await commandCount(online.id)).toBe(before);

    // A valid set-interval goes through; the device answers with the interval it applied.
    await page.getByLabel('Command', { exact: true }).selectOption('set-interval');
    await page.getByLabel('Interval (seconds, 1–3600)').fill('5');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => state(page), { timeout: 20_000 }).toBe('succeeded');
    expect(await page.locator('#command-current').textContent()).toContain('"seconds": 5');
    expect(await page.locator('#command-error').textContent()).toBe('');
    await page.close();
  }, 60_000);

  it("shows the device's answer as text, never as markup", async () => {
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    await signIn(page, env);
    await pick(page, online.id);
    await page.getByLabel('Command', { exact: true }).selectOption('custom');
    await page.getByLabel('Payload (a JSON object)').fill('{"note": "<img src=x onerror=window.pwned=1><b>bold</b>"}');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => state(page), { timeout: 20_000 }).toBe('succeeded');
    expect(await page.locator('#command-current').textContent()).toContain('<img src=x onerror=window.pwned=1><b>bold</b>');
    expect(await page.locator('#p-devices img, #p-devices b').count()).toBe(0);
    expect(await page.evaluate(() => (window as any).pwned)).toBeUndefined();
    await page.close();
  }, 60_000);

  it('queues a command to an offline device and cancels it', async () => {
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    await signIn(page, env);
    await pick(page, parked.id);
    await expect.poll(() => page.locator('#device-status [data-presence]').textContent(), { timeout: 15_000 }).toBe('offline');
    expect(await page.locator('#device-status').textContent()).toContain('Last seenneverLast connectednever');
    await page.getByLabel('Command', { exact: true }).selectOption('reboot');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => state(page), { timeout: 10_000 }).toBe('queued');
    // Still queued a few polls later: nothing can send it.
    await page.waitForTimeout(2500);
    expect(await state(page)).toBe('queued');
    await page.getByRole('button', { name: 'Cancel command' }).click();
    await expect.poll(() => state(page), { timeout: 10_000 }).toBe('cancelled');
    expect(await page.getByRole('button', { name: 'Cancel command' }).count()).toBe(0);
    await expect.poll(() => page.locator('#command-list li').first().textContent(), { timeout: 10_000 }).toMatch(/^reboot cancelled/);
    const { body } = await env.e.api('GET', `/api/v1/devices/${parked.id}/commands`);
    expect(body.commands.map((c: any) => [c.type, c.state])).toEqual([['reboot', 'cancelled']]);
    await page.close();
  }, 60_000);

  it('is reachable from the keyboard, labelled, and has 44 px touch targets at a phone\'s width', async () => {
    const page = await env.browser.newPage({ viewport: { width: 375, height: 800 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    await signIn(page, env);
    await pick(page, online.id);
    await page.locator('#command-list li').first().waitFor({ timeout: 15_000 });
    // From the type picker, Tab reaches Send; Enter on it sends a ping.
    await page.getByLabel('Command', { exact: true }).focus();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Send');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#command-current dd').first().textContent(), { timeout: 10_000 }).toBe('ping');
    await expect.poll(() => state(page), { timeout: 20_000 }).toBe('succeeded');
    await page.getByLabel('Command', { exact: true }).selectOption('custom');
    const sizes = await page.evaluate(() => [...document.querySelectorAll('#p-devices button, #p-devices select, #p-devices input, #p-devices textarea')]
      .filter((el) => (el as HTMLElement).offsetParent !== null)
      .map((el) => { const r = el.getBoundingClientRect(); return { what: el.outerHTML.slice(0, 60), w: r.width, h: r.height }; }));
    expect(sizes.length).toBeGreaterThan(3);
    expect(sizes.filter((s) => s.w < 44 || s.h < 44)).toEqual([]);
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll('#p-devices select, #p-devices input, #p-devices textarea')]
      .filter((el) => !(el as HTMLInputElement).labels?.length).map((el) => el.outerHTML));
    expect(unlabelled).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.locator('#command-list').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(OUTPUT, 'phone-commands.png') });
    await page.close();
  }, 60_000);

  it('saves a screenshot of the box with a command followed', async () => {
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    await signIn(page, env);
    await pick(page, online.id);
    await page.getByLabel('Command', { exact: true }).selectOption('request-vin');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => state(page), { timeout: 20_000 }).toBe('succeeded');
    await page.locator('#command-list li').nth(1).waitFor({ timeout: 10_000 });
    const file = path.join(OUTPUT, 'console-commands.png');
    await page.screenshot({ path: file });
    fs.copyFileSync(file, '/tmp/console-commands.png');
    await page.close();
  }, 60_000);
});
