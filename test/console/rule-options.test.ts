import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import polyline from '@mapbox/polyline';
import { OUTPUT, signIn, startConsoleEnv, type ConsoleEnv } from './browser.js';

/**
 * The rules panel's options in a real browser on the real platform: a corridor drawn point by point with dwell,
 * buffer and crossings, drawn on the map as its line, band and edges, and listed with its settings; a rule made
 * through the API with active hours, a radius buffer and a deadband, whose name is markup, shown as text.
 */
let env: ConsoleEnv;
beforeAll(async () => { env = await startConsoleEnv(); }, 60_000);
afterAll(async () => { await env?.close(); });

const MARKUP = '<img src=x onerror="window.__injected=1"><b>Depot</b>';

/** A dummy of its own for each test: its device's rules are that test's alone. */
async function newDevice(name: string): Promise<string> {
  const { body } = await env.e.api('POST', '/api/v1/dummies', { dummy: { name } });
  return body.dummy.deviceId;
}

async function openRules(page: Page, deviceId: string): Promise<void> {
  await signIn(page, env);
  await page.locator(`#device-select option[value="${deviceId}"]`).waitFor({ state: 'attached', timeout: 15_000 });
  await page.locator('#device-select').selectOption(deviceId);
  await page.getByRole('tab', { name: 'Rules & events' }).click();
}

/** The band's stroke width (px) and what 2 × its meters are in pixels at the current zoom, by the map's own scale. */
const bandWidths = (page: Page, meters: number) => page.evaluate((m) => {
  const map = (window as any).drivewireConsole.map;
  const c = map.getCenter();
  const p = map.latLngToContainerPoint(c);
  const mpp = map.distance(c, map.containerPointToLatLng([p.x + 100, p.y])) / 100;
  return { drawn: Number(document.querySelector('path.dw-corridor')!.getAttribute('stroke-width')), expected: (2 * m) / mpp };
}, meters);

describe('console rule options', () => {
  it('draws a corridor rule with dwell, buffer and crossings, shows it on the map and lists its settings', async () => {
    const deviceId = await newDevice('Corridor car');
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(String(err)));
    await openRules(page, deviceId);
    await page.evaluate(() => (window as any).drivewireConsole.map.setView([32.7810, -96.7990], 16, { animate: false }));

    await page.getByLabel('Rule name').fill('Elm Street corridor');
    await page.getByLabel('Corridor').check();
    await page.getByLabel('Width either side (m)').fill('40');
    await page.getByRole('button', { name: 'Draw on map' }).click();
    const box = (await page.locator('#map').boundingBox())!;
    const [cx, cy] = [box.x + box.width / 2, box.y + box.height / 2];
    for (const [dx, dy] of [[-220, 90], [-40, -60], [200, 10]]) await page.mouse.click(cx + dx, cy + dy);
    await page.getByRole('button', { name: 'Finish' }).click();
    expect(await page.getByText(/^Line of 3 points\.$/).count()).toBe(1);
    await page.getByLabel('Min inside (s)').fill('30');
    await page.getByLabel('Min outside (s)').fill('15');
    await page.getByLabel('Buffer (m)').fill('25');
    await page.getByLabel('Detect crossings between fixes').check();
    await page.getByRole('button', { name: 'Create rule' }).click();
    const item = page.locator('#rule-list li', { hasText: 'Elm Street corridor' });
    await item.waitFor({ timeout: 15_000 });

    // What the API stored: the clicked line, the width and every option.
    const { body: list } = await env.e.api('GET', `/api/v1/devices/${deviceId}/rules`);
    const { body: { rule } } = await env.e.api('GET', `/api/v1/rules/${list.rules[0].id}`);
    expect(rule).toMatchObject({ name: 'Elm Street corridor', minInsideSeconds: 30, minOutsideSeconds: 15, detectCrossings: true });
    expect(rule.boundaries).toHaveLength(1);
    expect(rule.boundaries[0]).toMatchObject({ type: 'corridor', widthMeters: 40, bufferMeters: 25 });
    expect(rule.boundaries[0].coordinates).toHaveLength(3);
    const centre = await page.evaluate(() => (window as any).drivewireConsole.map.getCenter());
    const [first, second, third] = rule.boundaries[0].coordinates;
    expect(first[0]).toBeLessThan(centre.lng);
    expect(third[0]).toBeGreaterThan(centre.lng);
    expect(second[1]).toBeGreaterThan(centre.lat); // screen y grows downwards

    // On the map: the line, the band of the width, the solid edge at the width, the dashed edge at width + buffer.
    await page.locator('path.dw-corridor').waitFor({ state: 'attached', timeout: 5000 });
    expect(await page.locator('#map .leaflet-overlay-pane path.dw-corridor-line').count()).toBe(1);
    expect(await page.locator('#map .leaflet-overlay-pane path.dw-corridor-edge').count()).toBe(1);
    expect(await page.locator('#map .leaflet-overlay-pane path.dw-rule-buffer').count()).toBe(1);
    expect(await page.locator('path.dw-rule-buffer').getAttribute('stroke-dasharray')).toBe('6 6');
    // The band is the width either side at this zoom, and at the next one.
    let w = await bandWidths(page, 40);
    expect(w.drawn).toBeCloseTo(w.expected, 0);
    await page.evaluate(() => (window as any).drivewireConsole.map.setZoom(17, { animate: false }));
    await expect.poll(async () => (await bandWidths(page, 40)).drawn, { timeout: 5000 }).toBeGreaterThan(w.drawn * 1.9);
    w = await bandWidths(page, 40);
    expect(w.drawn).toBeCloseTo(w.expected, 0);
    await page.evaluate(() => (window as any).drivewireConsole.map.setZoom(16, { animate: false }));

    // In the list: the boundary and each option in words.
    const text = await item.textContent();
    expect(text).toMatch(/corridor \d+ m long, 40 m either side, buffer 25 m/);
    expect(await item.locator('.rule-option').allTextContents()).toEqual(['dwell 30 s inside, 15 s outside', 'crossings between fixes detected']);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('shows a rule whose name is markup as text, with its active hours, radius buffer and deadband', async () => {
    const deviceId = await newDevice('Depot car');
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(String(err)));
    const { status, body } = await env.e.api('POST', `/api/v1/devices/${deviceId}/rules`, {
      rule: {
        name: MARKUP,
        minInsideSeconds: 120,
        activeHours: { timeZone: 'Europe/Berlin', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '07:00', until: '19:00' }, { days: ['sat'], from: '22:00', until: '06:00' }] },
        boundaries: [
          { type: 'radius', lat: 32.7790, lon: -96.7990, radius: 60, bufferMeters: 30 },
          { type: 'parametric', parameter: 'vehicleSpeed', min: 0, max: 50, deadband: 5 },
        ],
      },
    });
    expect(status, JSON.stringify(body)).toBe(201);
    // A corridor beside it, given as an encoded polyline: the console draws the coordinates it reads back.
    const elm = [[32.7822, -96.8040], [32.7812, -96.8000], [32.7818, -96.7960], [32.7808, -96.7925]] as [number, number][];
    const corridor = await env.e.api('POST', `/api/v1/devices/${deviceId}/rules`, {
      rule: { name: 'Elm Street', minInsideSeconds: 30, minOutsideSeconds: 15, detectCrossings: true, boundaries: [{ type: 'corridor', polyline: polyline.encode(elm), widthMeters: 35, bufferMeters: 20 }] },
    });
    expect(corridor.status, JSON.stringify(corridor.body)).toBe(201);
    const square = [[-96.7945, 32.7785], [-96.7925, 32.7785], [-96.7925, 32.7800], [-96.7945, 32.7800], [-96.7945, 32.7785]];
    const yard = await env.e.api('POST', `/api/v1/devices/${deviceId}/rules`, { rule: { name: 'Yard', boundaries: [{ type: 'polygon', coordinates: [square], bufferMeters: 25 }] } });
    expect(yard.status, JSON.stringify(yard.body)).toBe(201);
    await openRules(page, deviceId);
    await page.evaluate(() => (window as any).drivewireConsole.map.setView([32.7805, -96.7985], 16, { animate: false }));
    const item = page.locator('#rule-list li', { hasText: 'Depot' });
    await item.waitFor({ timeout: 15_000 });
    await page.locator('#rule-list li', { hasText: 'Elm Street' }).waitFor({ timeout: 15_000 });
    expect(await item.locator('strong').textContent()).toBe(MARKUP);
    expect(await page.locator('#p-rules img, #p-rules b, .leaflet-pane img:not(.leaflet-tile):not(.leaflet-marker-icon):not(.leaflet-marker-shadow)').count()).toBe(0);
    expect(await item.textContent()).toMatch(/radius 60 m, buffer 30 m, Speed 0–50 km\/h, deadband 5 km\/h/);
    expect(await item.locator('.rule-option').allTextContents())
      .toEqual(['dwell 2 min inside', 'active Mon–Fri 07:00–19:00; Sat 22:00–06:00 (Europe/Berlin)']);
    // The buffers' dashed edges (the circle's, the corridor's, the polygon's outer one); the tooltip on the fence, as text too.
    expect(await page.locator('path.dw-rule-buffer').count()).toBe(3);
    expect(await page.locator('#rule-list li', { hasText: 'Yard' }).textContent()).toContain('polygon of 4 vertices, buffer 25 m');
    expect(await page.locator('path.dw-corridor-line').count()).toBe(1);
    const fence = await page.evaluate(() => {
      const map = (window as any).drivewireConsole.map;
      const p = map.latLngToContainerPoint([32.7790, -96.7990]);
      const r = map.getContainer().getBoundingClientRect();
      return { x: r.left + p.x, y: r.top + p.y };
    });
    await page.mouse.move(fence.x, fence.y);
    await page.locator('.leaflet-tooltip').waitFor({ timeout: 5000 });
    expect(await page.locator('.leaflet-tooltip').textContent()).toBe(MARKUP);
    expect(await page.locator('.leaflet-tooltip *').count()).toBe(1); // the one span holding the text
    expect(await page.evaluate(() => (window as any).__injected)).toBeUndefined();
    await page.mouse.move(10, 10);
    await page.locator('#p-rules fieldset.options').evaluate((el) => el.scrollIntoView()); // the options, then the rules they made
    await page.screenshot({ path: path.join(OUTPUT, 'console-rule-options.png') });
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('keeps the form usable at phone width: labelled fields, 44 px targets, no sideways scroll', async () => {
    const deviceId = await newDevice('Phone car');
    const { status } = await env.e.api('POST', `/api/v1/devices/${deviceId}/rules`, {
      rule: {
        name: 'Route 1 with a rather long name that has to wrap on a phone', minInsideSeconds: 3600, minOutsideSeconds: 90, detectCrossings: true,
        boundaries: [{ type: 'corridor', coordinates: [[-96.8010, 32.7800], [-96.7990, 32.7815], [-96.7965, 32.7808]], widthMeters: 30, bufferMeters: 15 }],
      },
    });
    expect(status).toBe(201);
    const page = await env.browser.newPage({ viewport: { width: 375, height: 800 }, isMobile: true, hasTouch: true });
    await openRules(page, deviceId);
    await page.getByLabel('Corridor').check();
    const item = page.locator('#rule-list li', { hasText: 'Route 1' });
    await item.waitFor({ timeout: 15_000 });
    expect(await item.locator('.rule-option').allTextContents()).toEqual(['dwell 1 h inside, 1 min 30 s outside', 'crossings between fixes detected']);
    const small = await page.evaluate(() => [...document.querySelectorAll('#p-rules button, #p-rules select, #p-rules input, #p-rules .check')]
      .filter((el) => (el as HTMLElement).offsetParent !== null && !(el as HTMLInputElement).matches('input[type=checkbox], input[type=radio]'))
      .map((el) => { const r = el.getBoundingClientRect(); return { what: el.outerHTML.slice(0, 60), w: r.width, h: r.height }; })
      .filter((s) => s.h < 44 || s.w < 44));
    expect(small).toEqual([]);
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll('#p-rules select, #p-rules input')]
      .filter((el) => !(el as HTMLInputElement).labels?.length).map((el) => el.outerHTML));
    expect(unlabelled).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.evaluate(() => (window as any).drivewireConsole.map.setView([32.7808, -96.7988], 16, { animate: false }));
    await page.getByText('Options (leave empty for none)').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(OUTPUT, 'phone-rule-form.png') });
    await item.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(OUTPUT, 'phone-rule-options.png') });
    await page.close();
  }, 60_000);
});
