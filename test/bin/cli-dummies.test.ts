// The real `drivewire` binary against an in-process platform (API + gateway + workers): routes,
// dummies, runs, drive and simulate, and their one-line errors. Each binary start costs seconds of
// CPU (Node and tsx), so the tests start several at once and set up through the API what they do not test.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { estimateRun } from '../../simulator/runs.js';
import { loadStoredRoutes } from '../../simulator/route.js';
import { createTestDb } from '../helpers/db.js';
import { cliOk as ok, cliOneLine as oneLine, runCli } from '../helpers/cli.js';

const BACK_HOME = (await loadStoredRoutes()).find((r) => r.name === 'DFW - Back Home')!;

let db: Awaited<ReturnType<typeof createTestDb>>;
let dataDir: string;
let p: Platform;
let mqttUrl: string;
beforeAll(async () => {
  db = await createTestDb();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-cli-dummies-'));
  p = await startPlatform(loadConfig({ httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent' }, {}),
    silentLogger, { db });
  mqttUrl = p.parts.find((part) => part.urls?.mqtt)?.urls?.mqtt ?? '';
  fs.writeFileSync(path.join(dataDir, 'loop.geojson'), JSON.stringify({
    type: 'Feature', properties: { name: 'Loop in the file' },
    geometry: { type: 'LineString', coordinates: [[-96.8, 32.78], [-96.8, 32.782], [-96.798, 32.782]] },
  }));
  fs.writeFileSync(path.join(dataDir, 'bad.gpx'), '<gpx>\n<trk><trkseg>\n<trkpt lat="abc" lon="-96.8"/>\n</trkseg></trk>\n</gpx>\n');
});
afterAll(async () => { await p?.close(); await db?.close(); fs.rmSync(dataDir, { recursive: true, force: true }); });

// Generous timeouts: each binary start costs seconds of CPU, and the machine may be shared.
const cli = (...args: string[]) => runCli([...args, '--data-dir', dataDir], {}, 110_000);

/** Setup through the API, as the default application. */
async function createDummy(name: string): Promise<{ id: string; deviceId: string }> {
  const app = p.credentials.application;
  const res = await fetch(`${p.apiUrl}/api/v1/dummies`, {
    method: 'POST', body: JSON.stringify({ dummy: { name } }),
    headers: { authorization: `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`, 'content-type': 'application/json' },
  });
  return (await res.json()).dummy;
}


describe('drivewire routes, dummies, runs, drive, simulate (the real binary)', { timeout: 180_000 }, () => {
  it('lists and imports routes; a bad file or an unreachable server is one line and exit 1', async () => {
    const [list, imported, bad, down] = await Promise.all([
      cli('routes', 'list', '--json'),
      cli('routes', 'import', path.join(dataDir, 'loop.geojson'), '--description', 'two legs', '--json'),
      cli('routes', 'import', path.join(dataDir, 'bad.gpx')),
      cli('routes', 'list', '--api-url', 'http://127.0.0.1:1'),
    ]);
    expect(JSON.parse(ok(list)).map((r: any) => r.name)).toContain('DFW - Back Home');
    expect(JSON.parse(ok(imported))).toMatchObject({ name: 'Loop in the file', description: 'two legs', duration: expect.any(Number) });
    expect(oneLine(bad)).toBe('drivewire: 400 Bad Request - bad.gpx: line 3: trkpt lat="abc" is not a number');
    expect(oneLine(down)).toMatch(/^drivewire: Cannot reach the drivewire API at http:\/\/127\.0\.0\.1:1: /);
  });

  it('creates and lists dummies, runs one with --wait --json to a summary, then reports no current run', async () => {
    const created = JSON.parse(ok(await cli('dummies', 'create', '--name', 'cli car', '--json')));
    expect(created).toMatchObject({ name: 'cli car', caseId: expect.stringMatching(/^VV[A-Z0-9]{5}$/) });
    const [run, list, unknown, badCredentials] = await Promise.all([
      cli('runs', 'start', '--dummy', 'cli car', '--route', 'DFW - Back Home', '--speed', '40', '--wait', '--json'),
      cli('dummies', 'list'),
      cli('runs', 'status', '--dummy', 'nobody'),
      runCli(['dummies', 'list', '--data-dir', dataDir], { DRIVEWIRE_APP_SECRET: 'wrong' }, 110_000),
    ]);
    const { framesTotal, driveMs } = estimateRun(BACK_HOME);
    const summary = JSON.parse(ok(run));
    expect(summary).toMatchObject({ outcome: 'completed', framesSent: framesTotal, error: null });
    // The estimate's traffic is another draw than the run's: its duration is the route's within the solver's 0.01%.
    expect(Math.abs(summary.duration - driveMs)).toBeLessThan(driveMs * 0.001);
    expect(summary.distance).toBeCloseTo(389.4, 0);
    expect(run.stderr).toMatch(/^(starting|running): \d+\/\d+ frames, \d+\/388 m, [\d.]+ s left$/m); // plain progress lines (not a TTY)
    expect(ok(list)).toContain(`cli car  ${created.id}  ${created.deviceId}  ${created.caseId}`);
    expect(oneLine(unknown)).toBe('drivewire: No dummy named or with id "nobody"; see \'drivewire dummies list\'');
    expect(oneLine(badCredentials))
      .toBe(`drivewire: 401 Unauthorized - Missing or invalid credentials (check the credentials in ${path.join(dataDir, 'credentials.json')})`);
    expect(ok(await cli('runs', 'status', '--dummy', created.id))).toBe('No current run for "cli car"\n');
  });

  it('starts a run without waiting and stops it; drives one device with no API; load-tests with simulate', async () => {
    await createDummy('slow');
    const owner = await p.repos.devices.createOwner({ name: 'cli' });
    const { device, secret } = await p.repos.devices.provision({ name: 'bench', ownerId: owner.id });
    const [started, unknownRoute, drive, simulate] = await Promise.all([
      cli('runs', 'start', '--dummy', 'slow', '--route', BACK_HOME.id, '--vin', 'VV1AB2CD3EF456789', '--scenario', 'dtc', '--scenario', 'hard-brake'),
      cli('runs', 'start', '--dummy', 'slow', '--route', 'Nowhere'),
      runCli(['drive', '--mqtt-url', mqttUrl, '--device-id', device.id, '--secret', secret, '--route', 'dfw - back home', '--speed', '100', '--json'], {}, 110_000),
      cli('simulate', '--devices', '3', '--rate', '5', '--duration', '1', '--json'),
    ]);
    expect(ok(started)).toMatch(/^Run started: "slow" on "DFW - Back Home" \(vin VV1AB2CD3EF456789, speed x1, [\d.]+ s\)\n/);
    expect(oneLine(unknownRoute)).toBe('drivewire: No route named or with id "Nowhere"; see \'drivewire routes list\'');
    expect(JSON.parse(ok(drive))).toMatchObject({ route: 'DFW - Back Home', framesSent: 88, stopped: false });
    expect((await p.repos.telemetry.listMessages(device.id, { until: new Date(), limit: 100 })).messages).toHaveLength(88);
    const load = JSON.parse(ok(simulate));
    expect(load).toMatchObject({ devices: 3, connected: 3, connectFailures: 0, failed: 0 });
    expect(load.sent).toBeGreaterThanOrEqual(15); // 3 devices × 5 Hz × 1 s (+1 each when the last tick lands on 1 s)
    expect(load.sent).toBeLessThanOrEqual(18);
    expect(load.acknowledged).toBe(load.sent);
    expect(ok(await cli('runs', 'stop', '--dummy', 'slow'))).toMatch(/^Stopping run [0-9a-f-]{36} of "slow"\n$/);
  });
});
