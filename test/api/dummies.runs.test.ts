import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { estimateRun } from '../../simulator/runs.js';
import { loadStoredRoutes } from '../../simulator/route.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const BASE = 'http://localhost:3999';
const BACK_HOME = '8e90cf47-c6c1-486d-9ba8-194f569c7309';
const MISSING = '00000000-0000-4000-8000-000000000000';
const VIN = 'VV1AB2CD3EF456789';
const backHome = (await loadStoredRoutes()).find((r) => r.id === BACK_HOME)!;

const call = (auth: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
  t.app.inject({ method, url, headers: { authorization: auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function dummyOf(kind: 'enterprise' | 'consumer' = 'enterprise') {
  const app = await t.make.application(kind);
  const { dummy } = (await call(app.auth, 'POST', '/api/v1/dummies', { dummy: { name: 'runner' } })).json();
  return { app, dummy, runs: `/api/v1/dummies/${dummy.id}/runs` };
}

describe('runs', () => {
  it('starts a run: 201 with state starting and the estimates of the drive; _current shows it', async () => {
    const { app, dummy, runs } = await dummyOf();
    const res = await call(app.auth, 'POST', runs, { run: { vin: VIN, routeId: BACK_HOME, speed: 10, scenarios: ['dtc', 'hard-brake'] } });
    expect(res.statusCode).toBe(201);
    const { run } = res.json();
    const { framesTotal, driveMs } = estimateRun(backHome, { scenarios: ['dtc', 'hard-brake'] });
    expect(run).toEqual({
      id: expect.any(String),
      status: {
        routeId: BACK_HOME, repeat: false, state: 'starting', repeatCount: 0, lastSpeed: null,
        remainingSeconds: Math.round(driveMs / 10) / 1000, remainingMessages: framesTotal, speed: 10, scenarios: ['dtc', 'hard-brake'],
        vin: VIN, framesSent: 0, distance: 0, duration: 0, nextPassAt: null, waitReason: null, outcome: null, error: null,
        createdAt: expect.any(String), startedAt: null, endedAt: null,
      },
      links: {
        self: `${BASE}${runs}/_current`, run: `${BASE}${runs}/${run.id}`,
        dummy: `${BASE}/api/v1/dummies/${dummy.id}`, route: `${BASE}/api/v1/routes/${BACK_HOME}`,
      },
    });
    expect(framesTotal).toBe(88); // 86.85 s at 1 s, plus the shutdown frame
    expect(res.headers.location).toBe(`${BASE}${runs}/_current`);
    expect((await call(app.auth, 'GET', `${runs}/_current`)).json()).toEqual({ run });
    const again = await call(app.auth, 'POST', runs, { run: { vin: VIN, routeId: BACK_HOME } });
    expect(again.statusCode).toBe(409);
    expect(again.json().message).toBe(`Dummy "runner" already has an active run; stop it first (DELETE /api/v1/dummies/${dummy.id}/runs/_current)`);
  });

  it('answers each bad request with its status and message', async () => {
    const { app, runs } = await dummyOf();
    const rule = 'vin must be 17 characters: "VV" followed by 15 of A-Z (except I, O, Q) and 0-9';
    const cases: [unknown, number, string][] = [
      [{ vin: 'VV123', routeId: BACK_HOME }, 400, `${rule}; got "VV123"`],
      [{ vin: 'AB1AB2CD3EF456789', routeId: BACK_HOME }, 400, `${rule}; got "AB1AB2CD3EF456789"`],
      [{ vin: 'VV1AB2CD3EF45678O', routeId: BACK_HOME }, 400, `${rule}; got "VV1AB2CD3EF45678O"`],
      [{ routeId: BACK_HOME }, 400, "body/run must have required property 'vin'"],
      [{ vin: VIN, routeId: BACK_HOME, speed: 0.5 }, 400, 'speed must be a number from 1 (real time) to 1000; got 0.5'],
      [{ vin: VIN, routeId: BACK_HOME, speed: 1001 }, 400, 'speed must be a number from 1 (real time) to 1000; got 1001'],
      [{ vin: VIN, routeId: BACK_HOME, scenarios: ['dtc', 'flat-tyre'] }, 400,
        'scenarios: unknown scenario "flat-tyre"; known: hard-brake, hard-accel, dtc, weak-battery, collision, gps-gap, duplicates, unresponsive'],
      [{ vin: VIN, routeId: MISSING }, 404, `Route ${MISSING} not found`],
      [{ vin: VIN, routeId: 'nope' }, 400, 'body/run/routeId must match format "uuid"'],
    ];
    for (const [run, status, message] of cases) {
      const res = await call(app.auth, 'POST', runs, { run });
      expect({ run, status: res.statusCode, message: res.json().message }).toEqual({ run, status, message });
    }
    const unknownDummy = await call(app.auth, 'POST', `/api/v1/dummies/${MISSING}/runs`, { run: { vin: VIN, routeId: BACK_HOME } });
    expect({ status: unknownDummy.statusCode, message: unknownDummy.json().message }).toEqual({ status: 404, message: 'Dummy not found' });
    expect((await call(app.auth, 'GET', `${runs}/_current`)).json()).toEqual({ run: null });
  });

  it("drives another application's imported route only for that application (404)", async () => {
    const { app, runs } = await dummyOf();
    const other = await t.make.application();
    const line = { type: 'LineString', coordinates: [[-96.8, 32.78], [-96.8, 32.782]] };
    const { route } = (await call(other.auth, 'POST', '/api/v1/routes', { route: { name: 'private', geojson: line } })).json();
    expect((await call(app.auth, 'POST', runs, { run: { vin: VIN, routeId: route.id } })).statusCode).toBe(404);
  });

  it('stops a run nobody drives yet at once: 202 finished, then _current is null and DELETE answers 204', async () => {
    const { app, runs } = await dummyOf('consumer');
    const { run } = (await call(app.auth, 'POST', runs, { run: { vin: VIN, routeId: BACK_HOME, repeat: true } })).json();
    const stop = await call(app.auth, 'DELETE', `${runs}/_current`);
    expect(stop.statusCode).toBe(202);
    expect(stop.json().run.status).toMatchObject({ state: 'finished', outcome: 'stopped', repeat: true, remainingSeconds: 0 });
    expect(stop.json().run.links.self).toBe(`${BASE}${runs}/${run.id}`);
    expect((await call(app.auth, 'GET', `${runs}/_current`)).json()).toEqual({ run: null });
    const none = await call(app.auth, 'DELETE', `${runs}/_current`);
    expect(none.statusCode).toBe(204);
    expect(none.body).toBe('');
    const byId = (await call(app.auth, 'GET', `${runs}/${run.id}`)).json().run;
    expect(byId.status).toMatchObject({ state: 'finished', outcome: 'stopped', endedAt: expect.any(String) });
    const next = await call(app.auth, 'POST', runs, { run: { vin: VIN, routeId: BACK_HOME } });
    expect(next.statusCode).toBe(201);
    const list = (await call(app.auth, 'GET', runs)).json();
    expect(list.runs.map((r: any) => r.id)).toEqual([next.json().run.id, run.id]);
    expect(list.meta.pagination.total).toBe(2);
    expect((await call(app.auth, 'GET', `${runs}/${MISSING}`)).json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Run not found' });
  });

  it('marks a run a worker holds as stopping (the worker ends it), and counts remaining time down', async () => {
    const { app, dummy, runs } = await dummyOf();
    await call(app.auth, 'POST', runs, { run: { vin: VIN, routeId: BACK_HOME } });
    const claimed = (await t.repos.runLeases.claim('test-worker', 60_000, 100)).find((r) => r.dummyId === dummy.id)!;
    expect(claimed).toMatchObject({ state: 'starting', previousState: 'starting', previousLeaseUntil: null });
    await t.repos.runLeases.renew(claimed.id, 'test-worker', 60_000, {
      repeatCount: 0, lastSpeed: 31.2, remainingSeconds: 50, remainingMessages: 40, framesSent: 48, distance: 200, driveMs: 47000, nextPassAt: null, waitReason: null,
    });
    await new Promise((r) => setTimeout(r, 300));
    const current = (await call(app.auth, 'GET', `${runs}/_current`)).json().run.status;
    expect(current).toMatchObject({ state: 'starting', lastSpeed: 31.2, remainingMessages: 40, framesSent: 48, distance: 200, duration: 47000 });
    expect(current.remainingSeconds).toBeGreaterThan(49.5); // 50 s reported ≥ 0.3 s ago
    expect(current.remainingSeconds).toBeLessThan(49.71);
    const stop = await call(app.auth, 'DELETE', `${runs}/_current`);
    expect(stop.statusCode).toBe(202);
    expect(stop.json().run.status.state).toBe('stopping');
    expect((await call(app.auth, 'GET', `${runs}/_current`)).json().run.status.state).toBe('stopping');
    expect((await call(app.auth, 'POST', runs, { run: { vin: VIN, routeId: BACK_HOME } })).statusCode).toBe(409);
  });

  it('records calls in the transaction log under the dummy service', async () => {
    const { app } = await dummyOf();
    await call(app.auth, 'GET', '/api/v1/routes');
    const { transactions } = (await call(app.auth, 'GET', '/api/v1/transactions')).json();
    expect(transactions.slice(0, 2).map((x: any) => [x.method, x.path, x.statusCode, x.service])).toEqual([
      ['GET', '/api/v1/routes', 200, 'drivewire-dummy-service'],
      ['POST', '/api/v1/dummies', 201, 'drivewire-dummy-service'],
    ]);
  });
});
