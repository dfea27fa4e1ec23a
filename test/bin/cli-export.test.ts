// The real `drivewire export` binary against a listening API on a real database: files written, stdout, and its
// one-line errors. Each binary start costs seconds of CPU, so the runs of a test start together.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { csvObjects } from '../helpers/csv.js';
import { insertMessages, series } from '../helpers/telemetry.factory.js';
import { at, deviceOnVehicle, drive, feed } from '../db/trips.fixtures.js';

let t: TestApp;
let apiUrl: string;
let dir: string;
beforeAll(async () => {
  t = await buildTestApp();
  apiUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-cli-export-'));
});
afterAll(async () => { await t?.close(); fs.rmSync(dir, { recursive: true, force: true }); });

type App = { id: string; secret: string };
const cli = (app: App, ...args: string[]) => runCli([...args, '--api-url', apiUrl, '--data-dir', dir],
  { DRIVEWIRE_APP_ID: app.id, DRIVEWIRE_APP_SECRET: app.secret }, 110_000);

describe('drivewire export', () => {
  it("writes a device's messages to a file, and a vehicle's to stdout, in the range and format asked", async () => {
    const { app, device, vehicle } = await deviceOnVehicle(t);
    const inserted = await insertMessages(t.db.knex, series(device.id, at(0), 12, (i) => ({ data: { vehicleSpeed: i }, location: [-96.8, 32.78 + i / 1000] })));
    const file = path.join(dir, 'device.csv');
    const [toFile, toStdout, gpx] = await Promise.all([
      cli(app, 'export', 'messages', device.id, '--since', at(1).toISOString(), '--until', at(10).toISOString(), '--out', file),
      cli(app, 'export', 'messages', vehicle.id, '--format', 'ndjson', '--until', at(100).toISOString()),
      cli(app, 'export', 'messages', device.id, '--format', 'gpx', '--until', at(100).toISOString(), '--out', path.join(dir, 'd.gpx'), '--json'),
    ]);
    expect(toFile.code, toFile.stderr).toBe(0);
    expect(toFile.stdout.trim()).toBe(`Wrote 9 messages (${fs.statSync(file).size} bytes) to ${file}`);
    const { header, rows } = csvObjects(fs.readFileSync(file, 'utf8'));
    expect(header).toEqual(['timestamp', 'id', 'latitude', 'longitude', 'Speed (km/h)']);
    expect(rows.map((r) => r.id)).toEqual(inserted.slice(2, 11).map((m) => m.id));
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.part'))).toEqual([]);

    expect(toStdout.code, toStdout.stderr).toBe(0);
    expect(toStdout.stdout.trim().split('\n').map((l) => JSON.parse(l).id)).toEqual(inserted.map((m) => m.id));
    expect(toStdout.stderr.trim()).toMatch(/^Wrote 12 messages \(\d+ bytes\) to stdout$/);

    expect(gpx.code, gpx.stderr).toBe(0);
    expect(JSON.parse(gpx.stdout)).toEqual({ file: path.join(dir, 'd.gpx'), format: 'gpx', rows: 12, bytes: fs.statSync(path.join(dir, 'd.gpx')).size });
    expect(fs.readFileSync(path.join(dir, 'd.gpx'), 'utf8').match(/<trkpt /g)).toHaveLength(12);
  });

  it("writes a trip's track as GeoJSON", async () => {
    const { app, device } = await deviceOnVehicle(t);
    await feed(t, device.id, drive(0, 60, 30), 50);
    const [trip] = await t.db.knex('trips').where({ device_id: device.id });
    const file = path.join(dir, 'trip.geojson');
    const r = await cli(app, 'export', 'trip', trip.id, '--format', 'geojson', '--out', file);
    expect(r.code, r.stderr).toBe(0);
    const feature = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(feature.geometry.coordinates).toHaveLength(drive(0, 60, 30).length);
    expect(feature.properties.messageCount).toBe(drive(0, 60, 30).length);
  });

  it('fails in one line for an id the application cannot read and for a format the API refuses, leaving no file', async () => {
    const { app, device } = await deviceOnVehicle(t);
    const other = await t.make.application();
    const file = path.join(dir, 'never.csv');
    const [unknown, format] = await Promise.all([
      cli(other, 'export', 'messages', device.id, '--out', file),
      cli(app, 'export', 'messages', device.id, '--format', 'xlsx', '--out', file),
    ]);
    for (const r of [unknown, format]) {
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(unknown.stderr).toContain(`No device or vehicle ${device.id} that this application can read`);
    expect(format.stderr).toContain('400 Bad Request - format must be one of csv, ndjson, gpx; got "xlsx"');
    expect(fs.existsSync(file)).toBe(false);
  });
});
