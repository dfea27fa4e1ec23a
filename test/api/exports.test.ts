import { XMLParser } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { insertMessages, series } from '../helpers/telemetry.factory.js';
import { csvObjects } from '../helpers/csv.js';
import { at, deviceOnVehicle, drive, feed } from '../db/trips.fixtures.js';
import { csvCell, geojsonWriter, protectText, quoteField, xmlEscape } from '../../api/modules/exports/exports.formats.js';
import { EXPORT_PAGE_ROWS } from '../../db/repositories/exports.repository.js';
import { partitionsFor } from '../helpers/partitions.js';

const TEL = 'https://telemetry.example.test';
let t: TestApp;
beforeAll(async () => { t = await buildTestApp({ 'url.telemetry': TEL }); });
afterAll(async () => { await t?.close(); });

const notFound = { statusCode: 404, error: 'Not Found', message: 'Not found' };
const head = (url: string, auth: string) => t.app.inject({ method: 'HEAD', url, headers: { authorization: auth } });

async function setup() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  return { app, device };
}

const ACCEL = { maxX: 1.5, maxY: 2, maxZ: 9.8, minX: -1.5, minY: -2, minZ: 9.6 };

/** Four messages of 2024-05-01 10:00:0x: speed, rpm and a location; text values; accel; nothing. */
async function fourMessages(deviceId: string) {
  return insertMessages(t.db.knex, [
    { deviceId, ts: '2024-05-01T10:00:00.000Z', data: { rpm: 940, vehicleSpeed: 16 }, location: [-96.790123, 32.782034] },
    { deviceId, ts: '2024-05-01T10:00:01.000Z',
      data: { fuelSystemStatus: '=HYPERLINK("http://x.test")', oxygenSensorLocations: ['Bank 1 Sensor 1', '-Bank 2'] } },
    { deviceId, ts: '2024-05-01T10:00:02.000Z', data: { fuelType: 'Gas, "regular"\nE10', accel: ACCEL }, location: [-96.79, 32.79] },
    { deviceId, ts: '2024-05-01T10:00:03.000Z' },
  ]);
}

describe('GET /api/v1/devices/{deviceId}/messages/export?format=csv', () => {
  it('writes one RFC 4180 row per message, oldest first, with a column per parameter present named with its unit', async () => {
    const { app, device } = await setup();
    const [a, b, c, d] = await fourMessages(device.id);
    const res = await t.get(`/api/v1/devices/${device.id}/messages/export?since=2024-05-01&until=2024-05-02`, app.auth);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    expect(res.headers['content-disposition'])
      .toBe(`attachment; filename="device-${device.id}-from-20240501T000000Z-to-20240502T000000Z.csv"`);
    const { header, rows } = csvObjects(res.body);
    // catalog order: Fuel System Status, O2 Sensor Locations, RPM, Speed come in the catalog's order; accel axes last
    expect(header).toEqual(['timestamp', 'id', 'latitude', 'longitude', 'Fuel System Status', 'RPM (rpm)', 'Speed (km/h)',
      'O2 Sensor Locations', 'Fuel Type', 'Accel maxX (m/s²)', 'Accel maxY (m/s²)', 'Accel maxZ (m/s²)', 'Accel minX (m/s²)',
      'Accel minY (m/s²)', 'Accel minZ (m/s²)']);
    expect(rows.map((r) => r.id)).toEqual([a.id, b.id, c.id, d.id]);
    expect(rows[0]).toMatchObject({ timestamp: '2024-05-01T10:00:00.000Z', latitude: '32.782034', longitude: '-96.790123',
      'RPM (rpm)': '940', 'Speed (km/h)': '16', 'Fuel Type': '', 'Accel maxX (m/s²)': '' });
    // text that a spreadsheet would run as a formula is kept as text; arrays are joined
    expect(rows[1]).toMatchObject({ latitude: '', longitude: '', 'Fuel System Status': `'=HYPERLINK("http://x.test")`,
      'O2 Sensor Locations': 'Bank 1 Sensor 1; -Bank 2' });
    expect(rows[2]).toMatchObject({ 'Fuel Type': 'Gas, "regular"\nE10', 'Accel minX (m/s²)': '-1.5', 'Accel maxZ (m/s²)': '9.8' });
    expect(Object.values(rows[3]).slice(4).every((v) => v === '')).toBe(true);
  });

  it('takes since as exclusive and until as inclusive, and names only the columns present in the range', async () => {
    const { app, device } = await setup();
    const [, b, c] = await fourMessages(device.id);
    const res = await t.get(`/api/v1/devices/${device.id}/messages/export?since=2024-05-01T10:00:00.000Z&until=2024-05-01T10:00:02.000Z`, app.auth);
    const { header, rows } = csvObjects(res.body);
    expect(rows.map((r) => r.id)).toEqual([b.id, c.id]);
    expect(header).not.toContain('RPM (rpm)');
    expect(header).toContain('Fuel Type');
  });

  it('answers only the header row for a range without messages, and a file name without bounds not given', async () => {
    const { app, device } = await setup();
    const res = await t.get(`/api/v1/devices/${device.id}/messages/export`, app.auth);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('timestamp,id,latitude,longitude\r\n');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="device-${device.id}.csv"`);
  });

  it('pages through messages many to a millisecond without repeating or skipping one', async () => {
    const { app, device } = await setup();
    // three messages per millisecond, so that pages end inside a millisecond
    const n = 2 * EXPORT_PAGE_ROWS + 7;
    await partitionsFor(t.db.knex, 'messages', '2024-07-01T00:00:00Z');
    await t.db.knex.raw(`INSERT INTO messages (id, device_id, ts, num, received_at)
      SELECT message_uuid(x.ts), ?, x.ts, message_num(jsonb_build_object('rpm', x.i), NULL), now()
      FROM (SELECT i, '2024-07-01T00:00:00Z'::timestamptz + make_interval(secs => (i / 3) / 1000.0) AS ts
        FROM generate_series(0, ? - 1) i) x`, [device.id, n]);
    const res = await t.get(`/api/v1/devices/${device.id}/messages/export?until=2024-08-01`, app.auth);
    const { rows } = csvObjects(res.body);
    expect(rows.length).toBe(n);
    expect(new Set(rows.map((r) => r.id)).size).toBe(n);
    expect(rows.map((r) => Number(r['RPM (rpm)'])).sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i));
    const keys = rows.map((r) => `${r.timestamp} ${r.id}`);
    expect(keys).toEqual([...keys].sort());
    const count = await head(`/api/v1/devices/${device.id}/messages/export?until=2024-08-01`, app.auth);
    expect(count.headers['x-total-count']).toBe(String(n));
  });
});

describe('other formats of a device export', () => {
  it('writes NDJSON: one message per line exactly as GET …/messages/{id} shows it', async () => {
    const { app, device } = await setup();
    const inserted = await fourMessages(device.id);
    const res = await t.get(`/api/v1/devices/${device.id}/messages/export?format=ndjson&until=2024-05-02`, app.auth);
    expect(res.headers['content-type']).toBe('application/x-ndjson');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="device-${device.id}-to-20240502T000000Z.ndjson"`);
    const lines = res.body.split('\n');
    expect(lines.pop()).toBe('');
    for (const [k, m] of inserted.entries()) {
      const one = (await t.get(`/api/v1/messages/${m.id}`, app.auth)).json().message;
      expect(JSON.parse(lines[k])).toEqual(one);
    }
    expect(JSON.parse(lines[0]).links.self).toBe(`${TEL}/api/v1/messages/${inserted[0].id}?deviceId=${device.id}`);
  });

  it('writes GPX 1.1: a track point per message with a location, its time, its speed in m/s', async () => {
    const { app, device } = await setup();
    await fourMessages(device.id);
    const res = await t.get(`/api/v1/devices/${device.id}/messages/export?format=gpx&until=2024-05-02`, app.auth);
    expect(res.headers['content-type']).toBe('application/gpx+xml; charset=utf-8');
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(res.body);
    expect(doc.gpx).toMatchObject({ version: '1.1', xmlns: 'http://www.topografix.com/GPX/1/1' });
    expect(doc.gpx.trk.name).toBe(`drivewire device ${device.id}`);
    const points = doc.gpx.trk.trkseg.trkpt;
    expect(points).toHaveLength(2);
    expect(points[0]).toMatchObject({ lat: '32.782034', lon: '-96.790123', time: '2024-05-01T10:00:00.000Z' });
    expect(points[0].extensions['gpxtpx:TrackPointExtension']['gpxtpx:speed']).toBeCloseTo(16 / 3.6, 3);
    expect(points[1]).toMatchObject({ lat: '32.79', lon: '-96.79', time: '2024-05-01T10:00:02.000Z' });
    expect(points[1].extensions).toBeUndefined();
    const count = await head(`/api/v1/devices/${device.id}/messages/export?format=gpx&until=2024-05-02`, app.auth);
    expect(count.headers['x-total-count']).toBe('2');
  });
});

describe('HEAD, scoping and bad input', () => {
  it('answers HEAD with the headers of the GET, no body, and the number of rows', async () => {
    const { app, device } = await setup();
    await fourMessages(device.id);
    const res = await head(`/api/v1/devices/${device.id}/messages/export?since=2024-05-01T10:00:00.000Z&until=2024-05-02`, app.auth);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('');
    expect(res.headers['x-total-count']).toBe('3');
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="device-.*\.csv"$/);
  });

  it('answers 404 to an application that cannot read the device, the vehicle or the trip, on GET and HEAD', async () => {
    const { app, device, vehicle } = await deviceOnVehicle(t);
    await feed(t, device.id, drive(0, 120, 30), 50);
    const [trip] = await t.db.knex('trips').where({ device_id: device.id });
    const other = await t.make.application();
    for (const url of [`/api/v1/devices/${device.id}/messages/export`, `/api/v1/vehicles/${vehicle.id}/messages/export`,
      `/api/v1/trips/${trip.id}/export`]) {
      const res = await t.get(url, other.auth);
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toEqual(notFound);
      expect((await head(url, other.auth)).statusCode, url).toBe(404);
      expect((await t.get(url, app.auth)).statusCode, url).toBe(200);
    }
  });

  it('refuses a bad format, since or until, and since after until, with 400 naming the field', async () => {
    const { app, device } = await setup();
    const base = `/api/v1/devices/${device.id}/messages/export`;
    const cases: [string, RegExp][] = [
      ['format=xlsx', /^format must be one of csv, ndjson, gpx; got "xlsx"$/],
      ['since=yesterday', /^since must be an ISO 8601 timestamp/],
      ['until=2024-02-30', /^until "2024-02-30" is not a valid date$/],
      ['since=2000&until=1000', /^since \(1970-01-01T00:00:02.000Z\) must not be after until \(1970-01-01T00:00:01.000Z\)$/],
    ];
    for (const [q, message] of cases) {
      for (const res of [await t.get(`${base}?${q}`, app.auth), await head(`${base}?${q}`, app.auth)]) {
        expect(res.statusCode, q).toBe(400);
      }
      const body = (await t.get(`${base}?${q}`, app.auth)).json();
      expect(body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(body.message).toMatch(message);
    }
    expect((await t.get(`/api/v1/devices/not-a-uuid/messages/export`, app.auth)).json().message).toContain('deviceId');
    const other = await t.make.application();
    // the query is checked first, as in every list: a bad format is a 400 even for a device the caller cannot read
    expect((await t.get(`${base}?format=pdf`, other.auth)).statusCode).toBe(400);
  });

  it('logs the exports in the transaction log under the telemetry and trip services', async () => {
    const { app, device } = await deviceOnVehicle(t);
    await feed(t, device.id, drive(0, 120, 30), 50);
    const [trip] = await t.db.knex('trips').where({ device_id: device.id });
    await t.get(`/api/v1/devices/${device.id}/messages/export?format=ndjson`, app.auth);
    await t.get(`/api/v1/trips/${trip.id}/export`, app.auth);
    const { transactions } = (await t.get('/api/v1/transactions', app.auth)).json();
    expect(transactions.map((x: any) => [x.path.split('?')[0], x.statusCode, x.service.replace(/^.*-(\w+)-service$/, '$1')])).toEqual([
      [`/api/v1/trips/${trip.id}/export`, 200, 'trip'],
      [`/api/v1/devices/${device.id}/messages/export`, 200, 'telemetry'],
    ]);
  });

  it('describes the export routes in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const get = doc.paths['/api/v1/devices/{deviceId}/messages/export'].get;
    expect(Object.keys(get.responses['200'].content)).toEqual(['text/csv', 'application/x-ndjson', 'application/gpx+xml']);
    expect(get.parameters.map((p: any) => p.name)).toEqual(expect.arrayContaining(['since', 'until', 'format', 'deviceId']));
    expect(doc.paths['/api/v1/vehicles/{vehicleId}/messages/export'].head.responses['200']).toBeDefined();
    expect(Object.keys(doc.paths['/api/v1/trips/{tripId}/export'].get.responses['200'].content))
      .toEqual(['application/gpx+xml', 'application/geo+json']);
  });
});

describe('GET /api/v1/vehicles/{vehicleId}/messages/export', () => {
  it("merges the vehicle's messages from each device while it was in the vehicle, oldest first, with the device", async () => {
    const { app, device: a, vehicle } = await deviceOnVehicle(t); // a in the vehicle from at(-60)
    const b = await t.make.device(app.principal);
    const elsewhere = await t.repos.vehicles.upsertByVin('2HGCM82633A000001', async () => ({}));
    await t.repos.vehicles.associate(b.id, vehicle.id, at(5));
    await t.repos.vehicles.associate(a.id, elsewhere.id, at(20)); // a leaves the vehicle at 20 s
    const ofA = await insertMessages(t.db.knex, series(a.id, at(0), 30, (i) => ({ data: { rpm: i } }))); // 0..29 s
    const ofB = await insertMessages(t.db.knex, series(b.id, at(0), 30, (i) => ({ data: { vehicleSpeed: i } })));
    // a device of another application reporting the same vehicle is not the caller's
    const stranger = await t.make.device((await t.make.application()).principal);
    await t.repos.vehicles.associate(stranger.id, vehicle.id, at(-60));
    await insertMessages(t.db.knex, series(stranger.id, at(0), 5));
    const url = `/api/v1/vehicles/${vehicle.id}/messages/export?until=${at(100).toISOString()}`;
    const res = await t.get(url, app.auth);
    expect(res.headers['content-disposition']).toMatch(new RegExp(`^attachment; filename="vehicle-${vehicle.id}-to-\\d{8}T\\d{6}Z\\.csv"$`));
    const { header, rows } = csvObjects(res.body);
    expect(header.slice(0, 5)).toEqual(['timestamp', 'id', 'device', 'latitude', 'longitude']);
    const expected = [...ofA.slice(0, 20), ...ofB.slice(5)].sort((x, y) => x.ts.getTime() - y.ts.getTime() || (x.id < y.id ? -1 : 1));
    expect(rows.map((r) => r.id)).toEqual(expected.map((m) => m.id));
    expect(rows.filter((r) => r.device === b.id).map((r) => r['Speed (km/h)'])).toEqual(ofB.slice(5).map((_, i) => String(i + 5)));
    expect((await head(url, app.auth)).headers['x-total-count']).toBe(String(20 + 25));
    // a page size smaller than the export: the merge pages as the device export does
    const ndjson = await t.get(`${url}&format=ndjson`, app.auth);
    expect(ndjson.body.trim().split('\n').map((l) => JSON.parse(l).id)).toEqual(expected.map((m) => m.id));
  });

  it('reads the same intervals through the repository a page at a time', async () => {
    const { app, device: a, vehicle } = await deviceOnVehicle(t);
    const b = await t.make.device(app.principal);
    await t.repos.vehicles.associate(b.id, vehicle.id, at(-60));
    await insertMessages(t.db.knex, [...series(a.id, at(0), 7), ...series(b.id, at(0), 7)]);
    const source = { vehicleId: vehicle.id, deviceIds: [a.id, b.id] };
    const range = { until: at(100) };
    const ids: string[] = [];
    let after = null;
    for (;;) {
      const page = await t.repos.exports.page(source, range, after, 3);
      ids.push(...page.map((r) => r.id));
      if (page.length < 3) break;
      after = { ts: page[2].timestamp, id: page[2].id };
    }
    expect(ids).toHaveLength(14);
    expect(new Set(ids).size).toBe(14);
  });
});

describe('GET /api/v1/trips/{tripId}/export', () => {
  it("writes a trip's track as a GeoJSON Feature: a LineString and the trip's statistics as properties", async () => {
    const { app, device, vehicle } = await deviceOnVehicle(t);
    await feed(t, device.id, drive(0, 120, 30), 50);
    await insertMessages(t.db.knex, [{ deviceId: device.id, ts: at(500), location: [0, 0] }]); // after the trip
    const [row] = await t.db.knex('trips').where({ device_id: device.id });
    const { trip } = (await t.get(`/api/v1/trips/${row.id}`, app.auth)).json();
    const res = await t.get(`/api/v1/trips/${trip.id}/export?format=geojson`, app.auth);
    expect(res.headers['content-type']).toBe('application/geo+json');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="trip-${trip.id}.geojson"`);
    const feature = JSON.parse(res.body);
    expect(feature).toMatchObject({ type: 'Feature', id: trip.id, geometry: { type: 'LineString' } });
    expect(feature.properties).toEqual({ id: trip.id, deviceId: device.id, vehicleId: vehicle.id, start: trip.start, stop: trip.stop,
      status: 'completed', ...trip.stats });
    const frames = drive(0, 120, 30);
    expect(feature.geometry.coordinates).toHaveLength(trip.stats.locationCount);
    expect(feature.geometry.coordinates).toEqual(frames.map((f) => [f.lon, expect.closeTo(f.lat!, 9)]));
    expect((await head(`/api/v1/trips/${trip.id}/export?format=geojson`, app.auth)).headers['x-total-count']).toBe(String(frames.length));
  });

  it("writes a trip's track as GPX (the default format) and refuses a format trips do not have", async () => {
    const { app, device } = await deviceOnVehicle(t);
    await feed(t, device.id, drive(0, 60, 30), 50);
    const [trip] = await t.db.knex('trips').where({ device_id: device.id });
    const res = await t.get(`/api/v1/trips/${trip.id}/export`, app.auth);
    expect(res.headers['content-type']).toBe('application/gpx+xml; charset=utf-8');
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(res.body);
    const points = doc.gpx.trk.trkseg.trkpt;
    expect(points.map((p: any) => p.time)).toEqual(drive(0, 60, 30).map((f) => at(f.s).toISOString()));
    expect(Number(points[1].extensions['gpxtpx:TrackPointExtension']['gpxtpx:speed'])).toBeCloseTo(30 / 3.6, 3);
    const bad = await t.get(`/api/v1/trips/${trip.id}/export?format=csv`, app.auth);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toBe('format must be one of gpx, geojson; got "csv"');
  });
});

describe('export formats', () => {
  it('quotes CSV fields as RFC 4180 says and keeps formula-like text as text', () => {
    expect(quoteField('plain')).toBe('plain');
    expect(quoteField('a,b')).toBe('"a,b"');
    expect(quoteField('say "hi"')).toBe('"say ""hi"""');
    expect(quoteField('two\r\nlines')).toBe('"two\r\nlines"');
    for (const s of ['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx']) expect(protectText(s)).toBe(`'${s}`);
    expect(protectText('a=1')).toBe('a=1');
    expect(csvCell(-3.5)).toBe('-3.5');
    expect(csvCell('=cmd|"/c calc"!A1')).toBe(`"'=cmd|""/c calc""!A1"`);
    expect(csvCell(null)).toBe('');
  });

  it('escapes XML text and attributes', () => {
    expect(xmlEscape(`<a href="x">&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;');
  });

  it('writes a GeoJSON geometry of null for a track of fewer than two points', () => {
    const w = geojsonWriter('t1', { n: 1 }, 1);
    const row = { id: 'm', deviceId: 'd', timestamp: new Date(0), lon: 1, lat: 2, data: {} };
    expect(JSON.parse(w.head() + w.rows([row]) + w.tail())).toEqual({ type: 'Feature', id: 't1', properties: { n: 1 }, geometry: null });
  });
});
