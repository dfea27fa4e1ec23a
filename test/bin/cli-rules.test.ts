// The real `drivewire rules` binary against an in-process platform: rules created from each kind of option, read back
// through the API, listed and deleted, and its one-line errors (a bad option value, an API 400 as the API gave it).
// Each binary start costs seconds of CPU, so independent invocations run at once.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { silentLogger } from '../../lib/logger.js';
import { startPlatform, type Platform } from '../../bin/platform.js';
import { createTestDb } from '../helpers/db.js';
import { cliOk as ok, cliOneLine as oneLine, runCli } from '../helpers/cli.js';


let db: Awaited<ReturnType<typeof createTestDb>>;
let dataDir: string;
let p: Platform;
let dummy: { id: string; deviceId: string };
let other: { id: string; deviceId: string };
beforeAll(async () => {
  db = await createTestDb();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-cli-rules-'));
  p = await startPlatform(loadConfig({ httpPort: 0, mqttPort: 0, host: '127.0.0.1', mqttHost: '127.0.0.1', dataDir, logLevel: 'silent' }, {}),
    silentLogger, { db });
  dummy = (await api('POST', '/api/v1/dummies', { dummy: { name: 'rules-dummy' } })).body.dummy;
  other = (await api('POST', '/api/v1/dummies', { dummy: { name: 'rules-other' } })).body.dummy;
  fs.writeFileSync(path.join(dataDir, 'block.json'), JSON.stringify({
    type: 'Feature', properties: {},
    geometry: { type: 'Polygon', coordinates: [[[-96.81, 32.77], [-96.79, 32.77], [-96.79, 32.79], [-96.81, 32.79], [-96.81, 32.77]]] },
  }));
});
afterAll(async () => { await p?.close(); await db?.close(); fs.rmSync(dataDir, { recursive: true, force: true }); });

// Generous timeouts: each binary start costs seconds of CPU, and the machine may be shared.
const cli = (...args: string[]) => runCli(['rules', ...args, '--data-dir', dataDir], {}, 110_000);

/** A call as the default application, for setup and to read back what the CLI did. */
async function api(method: string, urlPath: string, body?: unknown) {
  const app = p.credentials.application;
  const res = await fetch(`${p.apiUrl}${urlPath}`, {
    method, body: body === undefined ? undefined : JSON.stringify(body),
    headers: { authorization: `Basic ${Buffer.from(`${app.id}:${app.secret}`).toString('base64')}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}


describe('drivewire rules', () => {
  it('creates a radius, a corridor along a stored route and a parametric rule with their options; lists and deletes them', async () => {
    const [radius, corridor, parametric, polygon] = await Promise.all([
      cli('create', 'rules-dummy', '--name', 'depot', '--radius', '-96.8,32.78,500', '--buffer', '25', '--min-inside', '30', '--crossings'),
      cli('create', dummy.deviceId, '--name', 'on route', '--corridor-route', 'DFW - Downtown Route 1', '--width', '50', '--json'),
      cli('create', 'rules-dummy', '--name', 'speeding', '--parameter', 'vehicleSpeed', '--min', '0', '--max', '120', '--deadband', '5',
        '--active-hours', 'mon-fri 08:00-18:00,fri-mon 22:00-06:00', '--time-zone', 'America/Chicago', '--json'),
      cli('create', 'rules-other', '--name', 'block', '--polygon', path.join(dataDir, 'block.json'), '--min-outside', '60', '--json'),
    ]);

    // the human rendering, then the rule as the API stores it
    const radiusOut = ok(radius);
    expect(radiusOut).toMatch(/^Created Rule "depot"\n {2}id: +[0-9a-f-]{36}\n/);
    expect(radiusOut).toContain(`device:       ${dummy.deviceId}`);
    expect(radiusOut).toContain('boundaries:   radius 500 m around -96.8,32.78 (buffer 25 m)');
    expect(radiusOut).toContain('min inside:   30 s');
    expect(radiusOut).toContain('crossings:    detected between fixes');
    const radiusId = /id: +([0-9a-f-]{36})/.exec(radiusOut)![1];
    expect((await api('GET', `/api/v1/rules/${radiusId}`)).body.rule).toMatchObject({
      name: 'depot', deviceId: dummy.deviceId, minInsideSeconds: 30, detectCrossings: true,
      boundaries: [{ type: 'radius', lon: -96.8, lat: 32.78, radius: 500, bufferMeters: 25 }],
    });

    const corridorRule = JSON.parse(ok(corridor));
    expect(corridorRule).toMatchObject({ name: 'on route', deviceId: dummy.deviceId, boundaries: [{ type: 'corridor', widthMeters: 50 }] });
    expect(corridorRule.boundaries[0].coordinates.length).toBeGreaterThan(10);
    // the stored route's line, decoded: downtown Dallas
    for (const [lon, lat] of corridorRule.boundaries[0].coordinates) {
      expect(lon).toBeGreaterThan(-97.1); expect(lon).toBeLessThan(-96.6);
      expect(lat).toBeGreaterThan(32.6); expect(lat).toBeLessThan(33.1);
    }

    const parametricRule = JSON.parse(ok(parametric));
    expect(parametricRule).toMatchObject({
      name: 'speeding',
      boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 0, max: 120, deadband: 5 }],
      activeHours: {
        timeZone: 'America/Chicago',
        windows: [
          { days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '08:00', until: '18:00' },
          { days: ['fri', 'sat', 'sun', 'mon'], from: '22:00', until: '06:00' },
        ],
      },
    });

    expect(JSON.parse(ok(polygon))).toMatchObject({
      name: 'block', deviceId: other.deviceId, minOutsideSeconds: 60,
      boundaries: [{ type: 'polygon', coordinates: [[[-96.81, 32.77], [-96.79, 32.77], [-96.79, 32.79], [-96.81, 32.79], [-96.81, 32.77]]] }],
    });

    const [list, listJson] = await Promise.all([cli('list', 'rules-dummy'), cli('list', dummy.deviceId, '--json')]);
    const lines = ok(list).trim().split('\n');
    expect(lines[0]).toMatch(/^name +id +state +options +createdAt$/);
    // the three were created at once: in any order, newest first
    expect(lines.slice(1).map((l) => l.split(/ {2,}/)[0]).sort()).toEqual(['depot', 'on route', 'speeding']);
    expect(lines.find((l) => l.startsWith('depot'))).toContain('min inside 30 s, crossings detected between fixes');
    expect(lines.find((l) => l.startsWith('speeding'))).toContain('active hours mon,tue,wed,thu,fri 08:00-18:00; fri,sat,sun,mon 22:00-06:00 (America/Chicago)');
    const listed: { id: string; createdAt: string }[] = JSON.parse(ok(listJson));
    expect(listed.map((r) => r.id).sort()).toEqual([parametricRule.id, corridorRule.id, radiusId].sort());
    expect(listed.map((r) => r.createdAt)).toEqual(listed.map((r) => r.createdAt).sort().reverse());

    expect(ok(await cli('delete', radiusId)).trim()).toBe(`Deleted rule ${radiusId}`);
    expect((await api('GET', `/api/v1/rules/${radiusId}`)).status).toBe(404);
    expect(oneLine(await cli('delete', radiusId))).toMatch(/404/);
  });

  it('refuses bad option values with a line naming the option, and shows the API\'s 400 as it came; creates nothing', async () => {
    const [radius, hours, zone, width] = await Promise.all([
      cli('create', 'rules-dummy', '--name', 'bad', '--radius', '-96.8,32.78'),
      cli('create', 'rules-dummy', '--name', 'bad', '--parameter', 'vehicleSpeed', '--max', '120', '--active-hours', 'weekdays 8-18', '--time-zone', 'UTC'),
      cli('create', 'rules-dummy', '--name', 'bad', '--parameter', 'vehicleSpeed', '--max', '120', '--active-hours', 'mon 08:00-18:00'),
      cli('create', 'rules-dummy', '--name', 'bad', '--corridor', '[[-96.8,32.78],[-96.79,32.79]]', '--width', '0'),
    ]);
    expect(oneLine(radius)).toContain('--radius must be lon,lat,meters');
    expect(oneLine(hours)).toContain('--active-hours must be windows like "mon-fri 08:00-18:00,sat 09:00-13:00"');
    expect(oneLine(zone)).toContain('--time-zone <IANA zone> is required with --active-hours');
    expect(oneLine(width)).toMatch(/400 .* - rule\.boundaries\[0\] \(corridor\): widthMeters must be greater than 0/);
    expect((await api('GET', `/api/v1/devices/${dummy.deviceId}/rules`)).body.rules.map((r: { name: string }) => r.name)).not.toContain('bad');
  });
});
