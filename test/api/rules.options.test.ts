import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import polyline from '@mapbox/polyline';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { rulesRequests } from './rules.requests.js';
import { at, ingest } from '../db/rules.fixtures.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const line = [[-96.8, 32.77], [-96.79, 32.775], [-96.78, 32.78]];
const hours = { timeZone: 'America/Chicago', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '07:30', until: '19:00' }, { days: ['sat'], from: '22:00', until: '02:00' }] };

const { setup, post, get } = rulesRequests(() => t);

describe('rule options over the API', () => {
  it('creates a corridor rule with every option and reads it back as created, in GET, the list and its events', async () => {
    const { app, device } = await setup();
    const rule = {
      name: 'Route 1', minInsideSeconds: 20, minOutsideSeconds: 10.5, detectCrossings: true, activeHours: hours,
      boundaries: [
        { type: 'corridor', coordinates: line, widthMeters: 50, bufferMeters: 15 },
        { type: 'parametric', parameter: 'vehicleSpeed', min: 0, max: 120, deadband: 5 },
      ],
    };
    const res = await post(app.auth, device.id, rule);
    expect(res.statusCode).toBe(201);
    const created = res.json().rule;
    const expected = {
      name: 'Route 1', minInsideSeconds: 20, minOutsideSeconds: 10.5, detectCrossings: true, activeHours: hours,
      boundaries: [
        { id: expect.any(String), type: 'corridor', coordinates: line, widthMeters: 50, bufferMeters: 15 },
        { id: expect.any(String), type: 'parametric', parameter: 'vehicleSpeed', min: 0, max: 120, deadband: 5 },
      ],
      evaluated: false, covered: false,
    };
    expect(created).toMatchObject(expected);
    expect((await get(app.auth, `/api/v1/rules/${created.id}`)).json().rule).toEqual(created);
    const [listed] = (await get(app.auth, `/api/v1/devices/${device.id}/rules`)).json().rules;
    expect(listed).toMatchObject({ minInsideSeconds: 20, minOutsideSeconds: 10.5, detectCrossings: true, activeHours: hours });
    expect(listed.boundaries).toBeUndefined();
  });

  it('takes a corridor as an encoded polyline and reads it back decoded', async () => {
    const { app, device } = await setup();
    const encoded = polyline.encode(line.map(([lon, lat]) => [lat, lon]), 5);
    const res = await post(app.auth, device.id, { name: 'p', boundaries: [{ type: 'corridor', polyline: encoded, widthMeters: 25 }] });
    expect(res.statusCode).toBe(201);
    expect(res.json().rule.boundaries[0]).toEqual({ id: expect.any(String), type: 'corridor', coordinates: line, widthMeters: 25 });
  });

  it('puts the options in the rule copy of its events, as GET /rules/{id} gives it, with dwellSeconds', async () => {
    const { app, device } = await setup();
    const rule = (await post(app.auth, device.id, { name: 'dwell', minOutsideSeconds: 5,
      boundaries: [{ type: 'radius', lon: 2.3522, lat: 48.8566, radius: 50, bufferMeters: 10 }] })).json().rule;
    await ingest(t, device.id, [{ ts: at(0), lon: 2.3522, lat: 48.8566 }, { ts: at(10), lon: 2.3522, lat: 48.86 }, { ts: at(20), lon: 2.3522, lat: 48.86 }]);
    const { events } = (await get(app.auth, `/api/v1/devices/${device.id}/events?type=rule-*`)).json();
    expect(events.map((e: { eventType: string }) => e.eventType)).toEqual(['rule-leave', 'rule-enter']);
    const { rule: now } = (await get(app.auth, `/api/v1/rules/${rule.id}`)).json();
    expect(events[0].meta.rule).toEqual({ ...now, evaluated: true });
    expect(events[0].meta).toMatchObject({ direction: 'leave', dwellSeconds: 5 });
    expect(events[1].meta.dwellSeconds).toBeUndefined();
  });

  it('creates a radius of half the Earth with crossings (no polygon holds it: crossings are timed at the segment\'s middle)', async () => {
    const { app, device } = await setup();
    const res = await post(app.auth, device.id, { name: 'world', detectCrossings: true, boundaries: [{ type: 'radius', lon: 2, lat: 48, radius: 20_037_509 }] });
    expect(res.statusCode).toBe(201);
    const [row] = await t.db.knex('rule_boundaries').select(t.db.knex.raw('fence IS NULL AS none')).where('rule_id', res.json().rule.id);
    expect(row.none).toBe(true);
  });

  const refusals: [string, unknown, string][] = [
    ['a corridor without a width', { boundaries: [{ type: 'corridor', coordinates: line }] }, 'rule.boundaries[0] (corridor): widthMeters is required'],
    ['a corridor of one position', { boundaries: [{ type: 'corridor', coordinates: [[0, 0], [0, 0]], widthMeters: 5 }] },
      "rule.boundaries[0] (corridor): a corridor's line needs at least 2 distinct positions, got 1"],
    ['a corridor both ways', { boundaries: [{ type: 'corridor', coordinates: line, polyline: 'abc', widthMeters: 5 }] },
      'rule.boundaries[0] (corridor): give the line as coordinates or as polyline, not both'],
    ['a corridor position out of range', { boundaries: [{ type: 'corridor', coordinates: [[0, 0], [0, 91]], widthMeters: 5 }] },
      'rule.boundaries[0] (corridor): position 1: latitude 91 is out of range -90..90'],
    ['a corridor too wide', { boundaries: [{ type: 'corridor', coordinates: line, widthMeters: 60_000 }] },
      'rule.boundaries[0] (corridor): widthMeters must be greater than 0 and at most 50000 (meters), got 60000'],
    ['a negative buffer', { boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: 5, bufferMeters: -1 }] },
      'rule.boundaries[0] (radius): bufferMeters must be a number from 0 to 100000 m, got -1'],
    ['a deadband past the range', { boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 10, max: null, deadband: 1e9 }] },
      expect.stringMatching(/^rule\.boundaries\[0\] \(parametric\): deadband must be a number from 0 to/)],
    ['a buffer on a parametric boundary', { boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 10, bufferMeters: 3 }] },
      'rule.boundaries[0] (parametric): field "bufferMeters" does not belong to a parametric boundary (it takes parameter, min, max, deadband)'],
    ['crossings without a fence', { detectCrossings: true, boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 10 }] },
      'rule.detectCrossings needs a geographic (radius, polygon or corridor) boundary: crossings are between fixes'],
    ['a dwell over a day', { minInsideSeconds: 90_000, boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: 5 }] },
      'rule.minInsideSeconds must be from 0 to 86400 (seconds), got 90000'],
    ['an unknown time zone', { activeHours: { ...hours, timeZone: 'Mars/Olympus' }, boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: 5 }] },
      'rule.activeHours.timeZone: unknown time zone "Mars/Olympus"; use an IANA name such as Europe/Berlin'],
    ['an unknown day', { activeHours: { timeZone: 'UTC', windows: [{ days: ['mon', 'funday'], from: '08:00', until: '09:00' }] }, boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: 5 }] },
      'rule.activeHours.windows[0].days: unknown day "funday"; use mon, tue, wed, thu, fri, sat, sun'],
    ['a time that is not HH:MM', { activeHours: { timeZone: 'UTC', windows: [{ days: ['mon'], from: '8:00', until: '24:00' }] }, boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: 5 }] },
      'rule.activeHours.windows[0].from must be HH:MM (00:00 to 23:59), got "8:00"'],
    ['no windows', { activeHours: { timeZone: 'UTC', windows: [] }, boundaries: [{ type: 'radius', lon: 0, lat: 0, radius: 5 }] },
      'rule.activeHours.windows must hold 1 to 14 windows'],
  ];
  for (const [what, body, message] of refusals) {
    it(`refuses ${what} with a 400 that says why, and stores nothing`, async () => {
      const { app, device } = await setup();
      const res = await post(app.auth, device.id, { name: 'bad', ...(body as object) });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ statusCode: 400, error: 'Bad Request', message });
      expect(Number((await t.db.knex('rules').where('device_id', device.id).count({ n: '*' }))[0].n)).toBe(0);
    });
  }

  it('documents the options in the create body of the OpenAPI document, rule and boundary', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const body = doc.paths['/api/v1/devices/{deviceId}/rules'].post.requestBody.content['application/json'].schema;
    const rule = body.properties.rule;
    expect(Object.keys(rule.properties)).toEqual(expect.arrayContaining(['minInsideSeconds', 'minOutsideSeconds', 'detectCrossings', 'activeHours']));
    expect(rule.properties.activeHours.properties.windows.items.required).toEqual(['days', 'from', 'until']);
    expect(Object.keys(rule.properties.boundaries.items.properties)).toEqual(expect.arrayContaining(['bufferMeters', 'deadband', 'widthMeters', 'polyline']));
  });
});
