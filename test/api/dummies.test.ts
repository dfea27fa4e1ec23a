import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const BASE = 'http://localhost:3999';
const call = (auth: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
  t.app.inject({ method, url, headers: { authorization: auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const BACK_HOME = '8e90cf47-c6c1-486d-9ba8-194f569c7309';
const MISSING = '00000000-0000-4000-8000-000000000000';

const LINE = { type: 'LineString', coordinates: [[-96.8, 32.78], [-96.8, 32.782], [-96.798, 32.782]] };
const GPX = (lat: string) => `<?xml version="1.0"?>
<gpx version="1.1" creator="test">
  <trk><name>Gpx drive</name><trkseg>
    <trkpt lat="32.78" lon="-96.8"/>
    <trkpt lat="${lat}" lon="-96.8"/>
  </trkseg></trk>
</gpx>`;

describe('routes', () => {
  it('lists the seven stored routes by name with the reference shape', async () => {
    const app = await t.make.application();
    const res = await call(app.auth, 'GET', '/api/v1/routes');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.routes.map((r: any) => r.name)).toEqual([
      'DFW - Back Home', 'DFW - Circle the Block', 'DFW - Downtown Route 1', 'DFW - Downtown Route 2',
      'DFW - Home Loop 1 of 3', 'DFW - Home Loop 2 of 3', 'DFW - Home Loop 3 of 3',
    ]);
    expect(body.routes[0]).toEqual({
      id: BACK_HOME, name: 'DFW - Back Home', description: expect.stringMatching(/^DFW residential streets/),
      messageCount: 28, locationCount: 28, distanceByGPS: 387.85, distanceByVSS: 446.427, duration: 86843,
      preview: 'y~kgEv_vmQLfBM|AB~@I~@Dt@AtHD~@ARGLD^AC', links: { self: `${BASE}/api/v1/routes/${BACK_HOME}` },
    });
    expect(body.meta.pagination).toMatchObject({ total: 7, offset: 0, limit: 20 });
    const page = (await call(app.auth, 'GET', '/api/v1/routes?offset=3&limit=3')).json();
    expect(page.routes.map((r: any) => r.name)).toEqual(['DFW - Downtown Route 2', 'DFW - Home Loop 1 of 3', 'DFW - Home Loop 2 of 3']);
    expect(page.meta.pagination.links).toEqual({
      first: `${BASE}/api/v1/routes?offset=0&limit=3`, last: `${BASE}/api/v1/routes?offset=6&limit=3`,
      next: `${BASE}/api/v1/routes?offset=6&limit=3`, prev: `${BASE}/api/v1/routes?offset=0&limit=3`,
    });
  });

  it('gets one route; an unknown id is 404 and a malformed one 400', async () => {
    const app = await t.make.application();
    expect((await call(app.auth, 'GET', `/api/v1/routes/${BACK_HOME}`)).json().route.name).toBe('DFW - Back Home');
    const missing = await call(app.auth, 'GET', `/api/v1/routes/${MISSING}`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Not found' });
    expect((await call(app.auth, 'GET', '/api/v1/routes/nope')).statusCode).toBe(400);
  });

  it('imports GeoJSON, GPX and polyline files: 201, Location, visible to the importing application only', async () => {
    const app = await t.make.application();
    const other = await t.make.application();
    const geo = await call(app.auth, 'POST', '/api/v1/routes', { route: { name: 'Geo', geojson: LINE, duration: 60000 } });
    expect(geo.statusCode).toBe(201);
    const route = geo.json().route;
    expect(geo.headers.location).toBe(`${BASE}/api/v1/routes/${route.id}`);
    expect(route).toMatchObject({ name: 'Geo', description: '', duration: 60000, messageCount: 60, locationCount: 60 });
    expect(route.distanceByGPS).toBeCloseTo(222.4 + 187.0, -1); // 0.002° north + 0.002° east at 32.78° N, ±5 m
    const gpx = await call(app.auth, 'POST', '/api/v1/routes', { route: { file: GPX('32.781'), fileName: 'drive.gpx' } });
    expect(gpx.statusCode).toBe(201);
    expect(gpx.json().route.name).toBe('Gpx drive');
    const poly = await call(app.auth, 'POST', '/api/v1/routes', { route: { polyline: '_p~iF~ps|U_ulLnnqC_mqNvxq`@', fileName: 'x.txt' } });
    expect(poly.statusCode).toBe(201);
    expect(poly.json().route.name).toBe('x');
    const names = (await call(app.auth, 'GET', '/api/v1/routes')).json().routes.map((r: any) => r.name);
    expect(names).toEqual(expect.arrayContaining(['Geo', 'Gpx drive', 'x']));
    expect(names).toHaveLength(10);
    expect((await call(other.auth, 'GET', '/api/v1/routes')).json().meta.pagination.total).toBe(7);
    expect((await call(other.auth, 'GET', `/api/v1/routes/${route.id}`)).statusCode).toBe(404);
  });

  it("refuses a bad file with the parser's message, and bad requests with theirs", async () => {
    const app = await t.make.application();
    const cases: [unknown, number, string][] = [
      [{ file: GPX('abc'), fileName: 'bad.gpx' }, 400, 'bad.gpx: line 5: trkpt lat="abc" is not a number'],
      [{ name: 'P', geojson: { type: 'Polygon', coordinates: [] } }, 400, 'geojson: type is Polygon, expected LineString, Feature or FeatureCollection'],
      [{ name: 'One', geojson: { type: 'LineString', coordinates: [[-96.8, 32.78]] } }, 400, 'geojson: a route needs at least 2 points, got 1'],
      [{ name: 'N' }, 400, 'route needs exactly one of file, geojson, gpx, polyline (the route file), got none'],
      [{ name: 'N', gpx: '{}' }, 400, 'gpx: route.gpx is not GPX (it does not start with "<")'],
      [{ geojson: LINE }, 400, 'route.name is required: the file carries no name'],
      [{ name: 'DFW - Back Home', geojson: LINE }, 409, 'A route named "DFW - Back Home" already exists'],
      [{ name: 'Long', geojson: LINE, duration: 0 }, 400, 'body/route/duration must be > 0'],
    ];
    for (const [route, status, message] of cases) {
      const res = await call(app.auth, 'POST', '/api/v1/routes', { route });
      expect({ status: res.statusCode, message: res.json().message }).toEqual({ status, message });
    }
  });
});

describe('dummies', () => {
  it('creates a dummy with a real device the application can read: 201, Location, reference shape', async () => {
    const app = await t.make.application();
    const res = await call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: 'QA car' } });
    expect(res.statusCode).toBe(201);
    const { dummy } = res.json();
    expect(res.headers.location).toBe(`${BASE}/api/v1/dummies/${dummy.id}`);
    expect(dummy).toEqual({
      id: expect.any(String), name: 'QA car', deviceId: expect.any(String), caseId: expect.stringMatching(/^VV[A-Z0-9]{5}$/),
      createdAt: expect.any(String),
      links: {
        self: `${BASE}/api/v1/dummies/${dummy.id}`, runs: `${BASE}/api/v1/dummies/${dummy.id}/runs`,
        device: `${BASE}/api/v1/devices/${dummy.deviceId}`, messages: `${BASE}/api/v1/devices/${dummy.deviceId}/messages`,
        events: `${BASE}/api/v1/devices/${dummy.deviceId}/events`,
      },
    });
    const device = await call(app.auth, 'GET', `/api/v1/devices/${dummy.deviceId}`);
    expect(device.statusCode).toBe(200);
    expect(device.json().device.name).toBe('QA car');
    expect((await call(app.auth, 'GET', '/api/v1/devices')).json().devices.map((d: any) => d.id)).toEqual([dummy.deviceId]);
    const secret = (await t.repos.dummies.device(dummy.id))!.secret;
    expect(await t.repos.devices.authenticate(dummy.deviceId, secret)).toBe(true);
    expect((await call(app.auth, 'GET', `/api/v1/dummies/${dummy.id}`)).json()).toEqual({ dummy });
  });

  it('gives a Consumer application an authorized device too', async () => {
    const app = await t.make.application('consumer');
    const { dummy } = (await call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: 'c' } })).json();
    expect((await call(app.auth, 'GET', `/api/v1/devices/${dummy.deviceId}`)).statusCode).toBe(200);
  });

  it('lists in creation order, allows at most 5 per application and unique names', async () => {
    const app = await t.make.application();
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push((await call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: `d${i}` } })).json().dummy.id);
    const sixth = await call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: 'd6' } });
    expect(sixth.statusCode).toBe(409);
    expect(sixth.json().message).toBe('An application may have at most 5 dummies; delete one first');
    const list = (await call(app.auth, 'GET', '/api/v1/dummies?limit=2&offset=2')).json();
    expect(list.dummies.map((d: any) => d.id)).toEqual(ids.slice(2, 4));
    expect(list.meta.pagination).toMatchObject({ total: 5, offset: 2, limit: 2 });
    await call(app.auth, 'DELETE', `/api/v1/dummies/${ids[0]}`);
    const dup = await call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: 'd2' } });
    expect({ status: dup.statusCode, message: dup.json().message }).toEqual({ status: 409, message: 'A dummy named "d2" already exists' });
    const blank = await call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: '  ' } });
    expect({ status: blank.statusCode, message: blank.json().message }).toEqual({ status: 400, message: 'dummy.name must not be blank' });
    const none = await call(app.auth, 'POST', '/api/v1/dummies', { dummy: {} });
    expect(none.statusCode).toBe(400);
    expect(none.json().message).toBe("body/dummy must have required property 'name'");
  });

  it('keeps the limit of 5 when creations race', async () => {
    const app = await t.make.application();
    const answers = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((i) => call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: `r${i}` } })));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 201, 201, 201, 201, 409, 409]);
    expect((await call(app.auth, 'GET', '/api/v1/dummies')).json().meta.pagination.total).toBe(5);
  });

  it("hides another application's dummies (404)", async () => {
    const app = await t.make.application();
    const other = await t.make.application();
    const { dummy } = (await call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: 'mine' } })).json();
    for (const [method, url] of [['GET', ''], ['DELETE', ''], ['GET', '/runs/_current'], ['DELETE', '/runs/_current'], ['GET', '/runs']] as const) {
      const res = await call(other.auth, method, `/api/v1/dummies/${dummy.id}${url}`);
      expect({ url, status: res.statusCode, message: res.json().message }).toEqual({ url, status: 404, message: 'Dummy not found' });
    }
    expect((await call(other.auth, 'GET', '/api/v1/dummies')).json().dummies).toEqual([]);
    expect((await call(other.auth, 'GET', `/api/v1/devices/${dummy.deviceId}`)).statusCode).toBe(404);
  });

  it('deletes a dummy: 204, gone, its device no longer readable and its old secret refused', async () => {
    const app = await t.make.application();
    const { dummy } = (await call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: 'gone' } })).json();
    const secret = (await t.repos.dummies.device(dummy.id))!.secret;
    const res = await call(app.auth, 'DELETE', `/api/v1/dummies/${dummy.id}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await call(app.auth, 'GET', `/api/v1/dummies/${dummy.id}`)).statusCode).toBe(404);
    expect((await call(app.auth, 'GET', `/api/v1/devices/${dummy.deviceId}`)).statusCode).toBe(404);
    expect(await t.repos.devices.authenticate(dummy.deviceId, secret)).toBe(false);
    expect((await call(app.auth, 'DELETE', `/api/v1/dummies/${dummy.id}`)).statusCode).toBe(404);
  });
});
