import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shot, signIn, startConsoleEnv, type ConsoleEnv } from './browser.js';

/** The console's Runs panel: import a route by drag and drop (and a bad file's reason), a repeating run stopped from the page; a polygon rule drawn. */
let env: ConsoleEnv;
beforeAll(async () => { env = await startConsoleEnv(); });
afterAll(async () => { await env?.close(); });

/** A GPX track of 12 points along a Dallas street, 1 s apart (~200 m). */
const GPX = `<?xml version="1.0"?>
<gpx version="1.1" creator="test"><trk><name>Elm Street sample</name><trkseg>
${Array.from({ length: 12 }, (_, i) => `<trkpt lat="${(32.7810 + i * 0.00015).toFixed(6)}" lon="${(-96.7990 + i * 0.0001).toFixed(6)}"><time>2026-06-01T12:00:${String(i * 5).padStart(2, '0')}Z</time></trkpt>`).join('\n')}
</trkseg></trk></gpx>`;

async function drop(page: import('playwright-core').Page, name: string, text: string) {
  const dataTransfer = await page.evaluateHandle(([n, t]) => {
    const dt = new DataTransfer();
    dt.items.add(new File([t], n, { type: 'application/octet-stream' }));
    return dt;
  }, [name, text] as const);
  await page.dispatchEvent('.drop', 'drop', { dataTransfer });
}

describe('console runs panel', () => {
  it('imports a dropped GPX file as a route, and shows why a bad file is refused', async () => {
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    await signIn(page, env);
    await page.getByRole('tab', { name: 'Runs' }).click();
    await drop(page, 'elm.gpx', GPX);
    await expect.poll(() => page.getByLabel('Route', { exact: true }).locator('option:checked').textContent(), { timeout: 15_000 })
      .toMatch(/^Elm Street sample \(\d+ m,/);
    expect(await page.locator('#run-status').textContent()).toContain('Imported route "Elm Street sample"');
    await page.locator('path.dw-route').waitFor({ timeout: 5000 });
    const { body } = await env.e.api('GET', '/api/v1/routes?limit=100');
    expect(body.routes.map((r: any) => r.name)).toContain('Elm Street sample');

    await drop(page, 'bad.gpx', '<gpx><trk><trkseg><trkpt lat="abc" lon="1"/></trkseg></trk></gpx>');
    await expect.poll(() => page.getByRole('alert').filter({ hasText: 'Import failed' }).textContent(), { timeout: 15_000 })
      .toMatch(/Import failed: bad\.gpx.*not a number/);
    await page.close();
  });

  it('starts a repeating run with a speed factor, follows it, and stops it', async () => {
    const page = await env.browser.newPage({ viewport: { width: 375, height: 800 }, isMobile: true, hasTouch: true });
    await signIn(page, env);
    await page.getByRole('tab', { name: 'Runs' }).click();
    await page.getByLabel('New dummy name').fill('Loop car');
    await page.getByRole('button', { name: 'Create dummy' }).click();
    await page.waitForFunction(() => (document.querySelector('#device-select') as HTMLSelectElement)?.selectedOptions[0]?.textContent === 'Loop car', null, { timeout: 20_000 });
    const route = page.getByLabel('Route', { exact: true });
    const circle = await route.locator('option', { hasText: 'DFW - Circle the Block' }).getAttribute('value');
    await route.selectOption(circle!);
    await page.getByLabel('Speed factor (1–1000)').fill('5');
    await page.getByLabel('Repeat until stopped').check();
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 30_000 }).toMatch(/Staterunning \(repeat, pass 1\)/);
    await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 30_000 }).toMatch(/Frames sent[1-9]/);
    const { body } = await env.e.api('GET', '/api/v1/dummies');
    const dummy = body.dummies.find((d: any) => d.name === 'Loop car');
    const { body: current } = await env.e.api('GET', `/api/v1/dummies/${dummy.id}/runs/_current`);
    expect(current.run.status).toMatchObject({ speed: 5, repeat: true, routeId: circle });
    await shot(page, 'phone-run');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

    await page.getByRole('button', { name: 'Stop run' }).click();
    await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 30_000 }).toMatch(/Last run: stopped/);
    expect(await page.getByRole('button', { name: 'Start run' }).isEnabled()).toBe(true);
    await page.close();
  });

  it('draws a polygon rule vertex by vertex and closes it on the first vertex', async () => {
    const { body } = await env.e.api('POST', '/api/v1/dummies', { dummy: { name: 'Polygon car' } });
    const page = await env.browser.newPage({ viewport: { width: 1280, height: 860 } });
    await signIn(page, env);
    await page.locator('#device-select').selectOption(body.dummy.deviceId);
    await page.getByRole('tab', { name: 'Rules & events' }).click();
    await page.getByLabel('Rule name').fill('Depot');
    await page.getByLabel('Polygon').check();
    await page.getByRole('button', { name: 'Draw on map' }).click();
    const box = (await page.locator('#map').boundingBox())!;
    const [cx, cy] = [box.x + box.width / 2, box.y + box.height / 2];
    for (const [dx, dy] of [[-60, -40], [60, -40], [80, 40], [-50, 50], [-60, -40]]) await page.mouse.click(cx + dx, cy + dy);
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.locator('#rule-list li', { hasText: 'Depot' }).waitFor({ timeout: 15_000 });
    const { body: rules } = await env.e.api('GET', `/api/v1/devices/${body.dummy.deviceId}/rules`);
    const { body: { rule } } = await env.e.api('GET', `/api/v1/rules/${rules.rules[0].id}`);
    expect(rule.name).toBe('Depot');
    expect(rule.boundaries[0].type).toBe('polygon');
    const ring = rule.boundaries[0].coordinates[0];
    expect(ring).toHaveLength(5);
    expect(ring[4]).toEqual(ring[0]);
    const centre = await page.evaluate(() => (window as any).drivewireConsole.map.getCenter());
    expect(ring[0][0]).toBeLessThan(centre.lng);
    expect(ring[1][0]).toBeGreaterThan(centre.lng);
    expect(ring[0][1]).toBeGreaterThan(centre.lat); // screen y grows downwards
    await page.locator('path.dw-rule').waitFor({ timeout: 5000 });
    await page.close();
  });
});
