import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePolyline } from '../../simulator/route.js';
import { shot, signIn, startConsoleEnv, type ConsoleEnv } from './browser.js';

/**
 * The console end to end, in a real browser on the real platform: sign in, create a dummy, draw a radius rule
 * across a stored route and subscribe to it, start a run at 40×, watch the marker move along the route, see
 * the trip with its polyline and grade when the run ends, and the rule-enter event with its notification.
 */
let env: ConsoleEnv;
beforeAll(async () => { env = await startConsoleEnv({}, true); });
afterAll(async () => { await env?.close(); });

const ROUTE = 'DFW - Downtown Route 1';

/** Meters from a [lat, lon] point to a [lon, lat] line (local equirectangular plane). */
function metersToLine([lat, lon]: [number, number], line: [number, number][]): number {
  const k = Math.cos((lat * Math.PI) / 180);
  const xy = ([x, y]: [number, number]) => [(x - lon) * 111_320 * k, (y - lat) * 110_574];
  let best = Infinity;
  for (let i = 0; i + 1 < line.length; i++) {
    const [ax, ay] = xy(line[i]);
    const [bx, by] = xy(line[i + 1]);
    const len2 = (bx - ax) ** 2 + (by - ay) ** 2;
    const u = len2 ? Math.max(0, Math.min(1, (-ax * (bx - ax) - ay * (by - ay)) / len2)) : 0;
    best = Math.min(best, Math.hypot(ax + u * (bx - ax), ay + u * (by - ay)));
  }
  return best;
}

describe('console end to end', () => {
  it('drives a dummy along a stored route: live marker, trip with polyline and grade, rule-enter event and its notification', async () => {
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(String(err)));
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) errors.push(m.text()); });
    const calls: string[] = [];
    page.on('request', (r) => { if (r.url().includes('/api/v1/')) calls.push(new URL(r.url()).pathname); });
    await signIn(page, env);

    // A dummy, made in the Runs panel.
    await page.getByRole('tab', { name: 'Runs' }).click();
    await page.getByLabel('New dummy name').fill('QA car');
    await page.getByRole('button', { name: 'Create dummy' }).click();
    await page.waitForFunction(() => (document.querySelector('#device-select') as HTMLSelectElement)?.selectedOptions[0]?.textContent === 'QA car', null, { timeout: 20_000 });
    const deviceId = await page.locator('#device-select').inputValue();
    const { body: { routes } } = await env.e.api('GET', '/api/v1/routes?limit=100');
    const route = routes.find((r: any) => r.name === ROUTE);
    const line = decodePolyline(route.preview) as [number, number][];

    // A radius rule drawn on the map around a point 40% along the route: click the centre, then the radius.
    await page.getByRole('tab', { name: 'Rules & events' }).click();
    await page.getByLabel('Rule name').fill('Downtown block');
    const [lon, lat] = line[Math.floor(line.length * 0.4)];
    await page.evaluate(([la, lo]) => (window as any).drivewireConsole.map.setView([la, lo], 16, { animate: false }), [lat, lon]);
    await page.getByRole('button', { name: 'Draw on map' }).click();
    const box = (await page.locator('#map').boundingBox())!;
    const cx = box.x + box.width / 2;
    const cy = box.y + box.height / 2;
    await page.mouse.click(cx, cy);
    await page.mouse.move(cx + 40, cy, { steps: 4 });
    await page.mouse.click(cx + 80, cy);
    const radius = Number(await page.getByLabel('Radius (m)').inputValue());
    expect(radius).toBeGreaterThan(50);
    expect(radius).toBeLessThan(400);
    expect(Number(await page.getByLabel('Centre latitude').inputValue())).toBeCloseTo(lat, 3);
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.locator('#rule-list li', { hasText: 'Downtown block' }).waitFor({ timeout: 15_000 });
    await page.locator('path.dw-rule').first().waitFor({ timeout: 5000 });
    // Subscribe to it: the receiver answers 201 on /ok/.
    await page.getByText("Subscribe to a rule's events").click();
    await page.getByLabel('Callback URL').fill(`${env.e.receiver!.base}/ok/console`);
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await expect.poll(async () => page.getByLabel('Subscription').locator('option').allTextContents(), { timeout: 10_000 })
      .toEqual([`rule-* → ${env.e.receiver!.base}/ok/console`]);

    // The run, at 40× (the 8-minute drive in about 12 s).
    await page.getByRole('tab', { name: 'Runs' }).click();
    await page.getByLabel('Route', { exact: true }).selectOption(route.id);
    await page.getByLabel('Speed factor (1–1000)').fill('40');
    await page.getByRole('button', { name: 'Start run' }).click();
    // The marker appears and moves along the route, from the live stream.
    const first = await page.waitForFunction((id) => (window as any).drivewireConsole.position(id), deviceId, { timeout: 30_000 }).then((h) => h.jsonValue()) as [number, number];
    const moved = await page.waitForFunction(([id, a]) => {
      const p = (window as any).drivewireConsole.position(id);
      return p && (p[0] !== a[0] || p[1] !== a[1]) ? p : null;
    }, [deviceId, first] as const, { timeout: 30_000, polling: 100 }).then((h) => h.jsonValue()) as [number, number];
    expect(metersToLine(first, line)).toBeLessThan(30);
    expect(metersToLine(moved, line)).toBeLessThan(30);
    await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 10_000 }).toMatch(/Frames sent/);
    await shot(page, 'run-live');

    // The run ends; the trip appears with its grade, drawn from its preview with start and stop markers.
    await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 60_000 }).toMatch(/Last run: completed/);
    await page.getByRole('tab', { name: 'Trips' }).click();
    const item = page.locator('#trip-list button.item').first();
    await expect.poll(() => item.locator('.grade').textContent(), { timeout: 45_000 }).toMatch(/^[ABCDFI]$/);
    await item.click();
    await page.locator('#trip-grade .grade').filter({ hasText: /^[ABCDF]$/ }).waitFor({ timeout: 15_000 });
    expect(await page.locator('path.dw-trip').count()).toBe(1);
    const d = await page.locator('path.dw-trip').getAttribute('d');
    expect(d!.split(/[ML]/).length).toBeGreaterThan(10);
    expect(await page.locator('.dw-pin.start').count()).toBe(1);
    expect(await page.locator('.dw-pin.stop').count()).toBe(1);
    await expect.poll(() => page.locator('#trip-detail .timeline .tick').count(), { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    expect(await page.locator('#trip-detail').textContent()).toMatch(/hard brakes? × 2 points/);
    await shot(page, 'trip');
    // The completed trip's card came with the device's report-card list, once: a later refresh asks for none.
    const refreshes = calls.filter((c) => c.endsWith('/trips')).length;
    await expect.poll(() => calls.filter((c) => c.endsWith('/trips')).length, { timeout: 15_000 }).toBeGreaterThan(refreshes);
    expect(calls.filter((c) => c.includes('/report_cards'))).toEqual([`/api/v1/devices/${deviceId}/report_cards`]);

    // The rule-enter event, live in the Rules panel, and its delivered notification.
    await page.getByRole('tab', { name: 'Rules & events' }).click();
    await page.locator('#rule-events li[data-event="rule-enter"]').first().waitFor({ timeout: 30_000 });
    expect(await page.locator('#rule-events li[data-event="rule-enter"]').first().textContent()).toContain('Downtown block');
    await expect.poll(() => page.locator('#notifications tbody tr').first().textContent(), { timeout: 30_000 }).toMatch(/complete.*201/);
    await shot(page, 'rules');

    // Clicking the device on the map shows its latest message with named parameters and units, its vehicle and battery.
    await page.locator('.dw-device').first().click();
    await expect.poll(() => page.getByRole('tab', { name: 'Device details' }).getAttribute('aria-selected')).toBe('true');
    const table = page.locator('#p-devices table');
    await table.waitFor({ timeout: 15_000 });
    const rows = await table.locator('tbody tr').allTextContents();
    expect(rows.some((r) => /^Speed[\d.]+km\/h$/.test(r)), rows.join(' | ')).toBe(true);
    expect(rows.some((r) => /^RPM[\d.]+rpm$/.test(r)), rows.join(' | ')).toBe(true);
    expect(await page.locator('#p-devices').textContent()).toMatch(/VIN VV[A-Z0-9]{15}/);
    expect(await page.locator('#p-devices .badge').first().textContent()).toMatch(/^(green|yellow|red|unknown)$/);
    await shot(page, 'device');
    expect(errors).toEqual([]);
    await page.close();
  }, 150_000);
});
