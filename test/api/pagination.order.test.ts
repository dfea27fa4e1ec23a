import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { insertMessages } from '../helpers/telemetry.factory.js';
import { createRule, depotRule, ingest, insideDepot, outsideDepot } from '../db/rules.fixtures.js';
import { cursorUntil } from '../../api/plugins/pagination.js';
import { up as cutNotificationTimes } from '../../db/migrations/033_notification_times_ms.js';
import { partitionsFor } from '../helpers/partitions.js';

// Stream lists page in the total order timestamp desc, id desc: a page never holds more than `limit` records, even
// when one millisecond holds more, and following `links.prior` returns each record exactly once.

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const AT = new Date('2026-04-01T12:00:00.123Z');
const UNTIL = '2026-04-02T00:00:00.000Z';

interface Walked { pages: string[][]; remaining: number[]; priors: (string | undefined)[]; last: { links: object } }

/** Follows `links.prior` from `url` to the end; `ids` picks the page's record ids from the answer. */
async function walk(auth: string, url: string, ids: (body: any) => string[], maxPages = 200): Promise<Walked> {
  const out: Walked = { pages: [], remaining: [], priors: [], last: { links: {} } };
  let next: string | undefined = url;
  while (next) {
    if (out.pages.length >= maxPages) throw new Error(`more than ${maxPages} pages from ${url}`);
    const res = await t.get(next, auth);
    expect(res.statusCode, next).toBe(200);
    const body = res.json();
    out.pages.push(ids(body));
    out.remaining.push(body.meta.pagination.remaining);
    out.priors.push(body.meta.pagination.links.prior);
    out.last = body.meta.pagination;
    next = body.meta.pagination.links.prior;
  }
  return out;
}

/**
 * Every page holds at most `limit` records and each record of `expected` comes exactly once, newest first in the
 * order (ts desc, id desc); each page's `remaining` is what the pages after it hold; the last page has `links: {}`.
 */
function expectWalk(w: Walked, limit: number, expected: string[]) {
  for (const p of w.pages) expect(p.length).toBeLessThanOrEqual(limit);
  expect(w.pages.flat()).toEqual(expected);
  w.remaining.forEach((r, k) => expect(r, `page ${k}`).toBe(w.pages.slice(k + 1).reduce((n, p) => n + p.length, 0)));
  expect(w.last.links).toEqual({});
}

/** Ids newest first in the stream's total order: timestamp desc, then id desc. */
const ordered = (records: { id: string; ts: Date }[]) => [...records]
  .sort((a, b) => b.ts.getTime() - a.ts.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((r) => r.id);

/** The `until` of a prior link continuing after record `id` of millisecond `at`, percent-encoded as in a link. */
const cursor = (id: string, at = AT) => encodeURIComponent(String(cursorUntil({ until: at, before: id })));

const sameMs = (n: number, ts = AT) => Array.from({ length: n }, () => ({ id: randomUUID(), ts }));

/** An event of the device and a startup subscription of the application to the device, for notifications. */
async function subscribedEvent(app: { id: string }, deviceId: string, vehicleId: string) {
  const [event] = sameMs(1);
  await insertEvents(deviceId, vehicleId, [event]);
  const subscription = randomUUID();
  await t.db.knex('subscriptions').insert({
    id: subscription, application_id: app.id, device_id: deviceId, event_type: 'startup', url: 'http://127.0.0.1:9/hook',
    created_at: AT, updated_at: AT,
  });
  return { event, subscription };
}

let vins = 0;
/** An application, a device it can read in a vehicle, and more devices in the same vehicle. */
async function setup(devices = 1) {
  const app = await t.make.application();
  const vehicle = await t.repos.vehicles.upsertByVin(`1HGCM82633A${String(++vins).padStart(6, '0')}`, async () => ({}));
  const ds = [];
  for (let i = 0; i < devices; i++) {
    const device = await t.make.device(app.principal);
    await t.repos.vehicles.associate(device.id, vehicle.id, new Date('2026-01-01T00:00:00Z'));
    ds.push(device);
  }
  return { app, vehicle, device: ds[0], devices: ds };
}

async function insertEvents(deviceId: string, vehicleId: string, records: { id: string; ts: Date }[]) {
  await t.db.knex('events').insert(records.map((r) => ({
    id: r.id, device_id: deviceId, vehicle_id: vehicleId, application_id: null, ts: r.ts, stored: r.ts,
    event_type: 'startup', object_type: 'vehicle', object_id: vehicleId, meta: null,
  })));
}

const eventIds = (b: any) => b.events.map((e: any) => e.id);

describe('events sharing one millisecond', () => {
  it('limit=1 over 30 events: each exactly once, remaining down by one per page, the last page without links', async () => {
    const { app, device, vehicle } = await setup();
    const events = sameMs(30);
    await insertEvents(device.id, vehicle.id, events);
    const w = await walk(app.auth, `/api/v1/devices/${device.id}/events?limit=1&until=${UNTIL}`, eventIds);
    expect(w.pages.map((p) => p.length)).toEqual(Array(30).fill(1));
    expect(w.remaining).toEqual(Array.from({ length: 30 }, (_, k) => 29 - k));
    expectWalk(w, 1, ordered(events));
    // inside the millisecond the link's until names it and the last event's id; the spec's form is not enough there
    const ids = w.pages.flat();
    expect(w.priors[0]).toBe(`http://localhost:3999/api/v1/devices/${device.id}/events?limit=1&until=${cursor(ids[0])}`);
    expect(w.priors[28]).toMatch(new RegExp(`until=${cursor(ids[28])}$`));
    // a date parser reads that until as the millisecond (the SDK re-validates a link's until as a date)
    expect(new Date(decodeURIComponent(w.priors[0]!.split('until=')[1])).getTime()).toBe(AT.getTime());
  });

  it('limit=2 over 31 events (an odd number): pages of 2 and a last page of 1', async () => {
    const { app, device, vehicle } = await setup();
    const events = sameMs(31);
    await insertEvents(device.id, vehicle.id, events);
    const w = await walk(app.auth, `/api/v1/vehicles/${vehicle.id}/events?limit=2&until=${UNTIL}`, eventIds);
    expect(w.pages.map((p) => p.length)).toEqual([...Array(15).fill(2), 1]);
    expectWalk(w, 2, ordered(events));
  });

  it('keeps the spec form until = last − 1 ms when the next older event is in an earlier millisecond', async () => {
    const { app, device, vehicle } = await setup();
    const older = new Date(AT.getTime() - 1000);
    const events = [...sameMs(3), ...sameMs(3, older)];
    await insertEvents(device.id, vehicle.id, events);
    const w = await walk(app.auth, `/api/v1/devices/${device.id}/events?limit=3&until=${UNTIL}`, eventIds);
    expect(w.priors[0]).toBe(`http://localhost:3999/api/v1/devices/${device.id}/events?limit=3&until=${AT.getTime() - 1}`);
    expectWalk(w, 3, ordered(events));
  });

  it('keeps since and the filters in the cursor link, and counts remaining within since', async () => {
    const { app, device, vehicle } = await setup();
    const older = new Date(AT.getTime() - 5000);
    const events = sameMs(7);
    await insertEvents(device.id, vehicle.id, [...events, ...sameMs(4, older)]);
    const since = older.getTime();
    const w = await walk(app.auth, `/api/v1/devices/${device.id}/events?limit=3&type=startup&since=${since}&until=${UNTIL}`, eventIds);
    expect(w.priors[0]).toMatch(new RegExp(`type=startup&limit=3&since=${since}&until=2026-04-01T12%3A00%3A00\\.123\\d{39}Z$`));
    expectWalk(w, 3, ordered(events));
  });
});

describe('the cursor in until', () => {
  it('refuses a cursor no id can make with a 400 and the error body, and reads other until values as dates', async () => {
    const { app, device } = await setup();
    const path = `/api/v1/devices/${device.id}/events`;
    const tooLarge = await t.get(`${path}?until=${encodeURIComponent(`2026-04-01T12:00:00.123${'9'.repeat(39)}Z`)}`, app.auth);
    expect(tooLarge.statusCode).toBe(400);
    expect(tooLarge.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(tooLarge.json().message).toMatch(/^until ".*\.\.\." is not a cursor of a prior link$/);
    const messages = await t.get(`/api/v1/devices/${device.id}/messages?until=${encodeURIComponent(`2026-04-01T12:00:00.123${'9'.repeat(39)}Z`)}`, app.auth);
    expect(messages.statusCode).toBe(400);
    // a plain ISO date with up to 9 fractional digits is still a date
    expect((await t.get(`${path}?until=2026-04-01T12:00:00.123456789Z`, app.auth)).statusCode).toBe(200);
  });

  it('continues after the record the cursor names, whatever the case of its digits and Z', async () => {
    const { app, device, vehicle } = await setup();
    const events = sameMs(4);
    await insertEvents(device.id, vehicle.id, events);
    const ids = ordered(events);
    const res = await t.get(`/api/v1/devices/${device.id}/events?limit=10&until=${cursor(ids[1]).replace(/Z$/, 'z')}`, app.auth);
    expect(res.json().events.map((e: any) => e.id)).toEqual(ids.slice(2));
  });
});

describe('telemetry lists sharing one millisecond', () => {
  it('messages without since: at most limit per page, each once, remaining exact from the stored total with the cursor', async () => {
    const { app, device } = await setup();
    const inWindow = await insertMessages(t.db.knex, [
      ...sameMs(9).map((m) => ({ ...m, deviceId: device.id })),
      ...sameMs(2, new Date(AT.getTime() - 1)).map((m) => ({ ...m, deviceId: device.id })),
    ]);
    // newer than until: never on a page, never counted
    await insertMessages(t.db.knex, sameMs(3, new Date('2026-04-03T00:00:00Z')).map((m) => ({ ...m, deviceId: device.id })));
    const ids = (b: any) => b.messages.map((m: any) => m.id);
    const all = ordered(inWindow);
    for (const limit of [1, 2, 4]) {
      const w = await walk(app.auth, `/api/v1/devices/${device.id}/messages?limit=${limit}&until=${UNTIL}`, ids);
      expectWalk(w, limit, all);
    }
    // starting inside the millisecond from a cursor: the messages after it, and a remaining that counts the rest
    const from = await walk(app.auth, `/api/v1/devices/${device.id}/messages?limit=2&until=${cursor(all[3])}`, ids);
    expectWalk(from, 2, all.slice(4));
    // with since the count is made by the statement, not the stored total: the same answers
    const since = await walk(app.auth, `/api/v1/devices/${device.id}/messages?limit=2&since=${AT.getTime() - 10}&until=${UNTIL}`, ids);
    expectWalk(since, 2, all);
  });

  it('locations and snapshots', async () => {
    const { app, device } = await setup();
    const located = await insertMessages(t.db.knex, sameMs(5).map((m) => ({ ...m, deviceId: device.id, location: [-96.8, 32.77] as [number, number], data: { rpm: 900 } })));
    await insertMessages(t.db.knex, sameMs(3).map((m) => ({ ...m, deviceId: device.id, data: { speed: 10 } })));
    const locations = await walk(app.auth, `/api/v1/devices/${device.id}/locations?limit=2&until=${UNTIL}`,
      (b) => b.locations.features.map((f: any) => f.properties.id));
    expectWalk(locations, 2, ordered(located));
    const snapshots = await walk(app.auth, `/api/v1/devices/${device.id}/snapshots?fields=rpm&limit=2&until=${UNTIL}`,
      (b) => b.snapshots.map((s: any) => s.id));
    expectWalk(snapshots, 2, ordered(located));
    expect(snapshots.priors[0]).toContain('fields=rpm');
  });
});

describe('the other stream lists sharing one millisecond', () => {
  it('trips of a vehicle and report cards', async () => {
    const { app, vehicle, devices, device } = await setup(3);
    const trips = devices.map((d) => ({ id: randomUUID(), ts: AT, deviceId: d.id }));
    await t.db.knex('trips').insert(trips.map((r) => ({
      id: r.id, device_id: r.deviceId, vehicle_id: vehicle.id, start_ts: r.ts, stop_ts: new Date(r.ts.getTime() + 60_000),
      last_ts: new Date(r.ts.getTime() + 60_000), start_reason: 'ignition', end_reason: 'ignition', touched_at: new Date(),
    })));
    const w = await walk(app.auth, `/api/v1/vehicles/${vehicle.id}/trips?limit=1&until=${UNTIL}`, (b) => b.trips.map((x: any) => x.id));
    expectWalk(w, 1, ordered(trips));
    // one device's trips start at distinct times; its report cards may share one
    const ownTrips = Array.from({ length: 5 }, (_, i) => ({ id: randomUUID(), start: new Date(AT.getTime() - (i + 1) * 3_600_000) }));
    await t.db.knex('trips').insert(ownTrips.map((r) => ({
      id: r.id, device_id: device.id, vehicle_id: vehicle.id, start_ts: r.start, stop_ts: AT, last_ts: AT,
      start_reason: 'ignition', end_reason: 'ignition', touched_at: new Date(),
    })));
    const cards = ownTrips.map((r) => ({ id: randomUUID(), ts: AT, tripId: r.id }));
    await t.db.knex('report_cards').insert(cards.map((c) => ({
      id: c.id, trip_id: c.tripId, device_id: device.id, vehicle_id: vehicle.id, ts: c.ts, grade: 'A', score: 1, created_at: new Date(),
    })));
    const ids = (b: any) => b.reportCards.map((c: any) => c.id);
    expectWalk(await walk(app.auth, `/api/v1/devices/${device.id}/report_cards?limit=2&until=${UNTIL}`, ids), 2, ordered(cards));
    expectWalk(await walk(app.auth, `/api/v1/vehicles/${vehicle.id}/report_cards?limit=2&until=${UNTIL}`, ids), 2, ordered(cards));
  });

  it('trouble codes of a vehicle', async () => {
    const { app, vehicle, device } = await setup();
    const occurrences = sameMs(5);
    for (const [i, o] of occurrences.entries()) {
      const number = `P0${String(vins).padStart(2, '0')}${i}`;
      const codeId = randomUUID();
      await t.db.knex('dtc_codes').insert({ id: codeId, number, make: 'generic', system: 'powertrain', subsystem: 'fuel', description: `code ${number}` });
      await t.db.knex('dtc_occurrences').insert({ id: o.id, device_id: device.id, vehicle_id: vehicle.id, code_id: codeId, number, start: o.ts, stop: null });
    }
    const w = await walk(app.auth, `/api/v1/vehicles/${vehicle.id}/codes?limit=2&until=${UNTIL}`, (b) => b.codes.map((c: any) => c.id));
    expectWalk(w, 2, ordered(occurrences));
  });

  it('collisions of a vehicle', async () => {
    const { app, vehicle, devices } = await setup(3);
    const collisions = devices.map((d) => ({ id: randomUUID(), ts: AT, deviceId: d.id }));
    await t.db.knex('collisions').insert(collisions.map((c) => ({
      id: c.id, device_id: c.deviceId, vehicle_id: vehicle.id, ts: c.ts, last_ts: c.ts, message_id: randomUUID(),
      latitude: null, longitude: null, peak_g: 4, source: 'device',
    })));
    const w = await walk(app.auth, `/api/v1/vehicles/${vehicle.id}/collisions?limit=1&until=${UNTIL}`, (b) => b.collisions.map((c: any) => c.id));
    expectWalk(w, 1, ordered(collisions));
  });

  it('odometer readings and triggers', async () => {
    const { app, vehicle } = await setup();
    const readings = [];
    for (let i = 0; i < 5; i++) {
      const o = await t.repos.odometers.createOdometer(app.id, vehicle.id, 10_000 + i, AT);
      readings.push({ id: o.id, ts: AT });
    }
    const r = await walk(app.auth, `/api/v1/vehicles/${vehicle.id}/odometers?limit=2&until=${UNTIL}`, (b) => b.odometers.map((o: any) => o.id));
    expectWalk(r, 2, ordered(readings));
    const triggers = sameMs(5);
    await t.db.knex('odometer_triggers').insert(triggers.map((x) => ({
      id: x.id, vehicle_id: vehicle.id, application_id: app.id, type: 'milestone', threshold_m: 1000, events: 0, next_m: 1000,
      done: false, created_at: x.ts,
    })));
    const g = await walk(app.auth, `/api/v1/vehicles/${vehicle.id}/odometer_triggers?limit=2&until=${UNTIL}`,
      (b) => b.odometerTriggers.map((o: any) => o.id));
    expectWalk(g, 2, ordered(triggers));
  });

  it('notifications of a subscription and of an event', async () => {
    const { app, device, vehicle } = await setup();
    const { event, subscription } = await subscribedEvent(app, device.id, vehicle.id);
    const notifications = sameMs(5);
    await partitionsFor(t.db.knex, 'notifications', notifications[0].ts);
    await t.db.knex('notifications').insert(notifications.map((n) => ({
      id: n.id, event_id: event.id, subscription_id: subscription, application_id: app.id, device_id: device.id,
      url: 'http://127.0.0.1:9/hook', state: 'complete', created_at: n.ts,
    })));
    const ids = (b: any) => b.notifications.map((n: any) => n.id);
    expectWalk(await walk(app.auth, `/api/v1/subscriptions/${subscription}/notifications?limit=2&until=${UNTIL}`, ids), 2, ordered(notifications));
    expectWalk(await walk(app.auth, `/api/v1/events/${event.id}/notifications?limit=2&until=${UNTIL}`, ids), 2, ordered(notifications));
  });

  it('transactions', async () => {
    const app = await t.make.application();
    const lines = sameMs(5);
    await partitionsFor(t.db.knex, 'transactions', lines[0].ts);
    await t.db.knex('transactions').insert(lines.map((l) => ({
      id: l.id, application_id: app.id, ts: l.ts, path: '/api/v1/devices', status_code: 200, method: 'GET', service: 'platform',
    })));
    const w = await walk(app.auth, `/api/v1/transactions?limit=2&until=${UNTIL}`, (b) => b.transactions.map((x: any) => x.id));
    expectWalk(w, 2, ordered(lines));
  });

  it("rule events' notifications: stored to the millisecond, so paging by their time neither skips nor repeats", async () => {
    const { app, device } = await setup();
    const rule = await createRule(t, app, device.id, depotRule);
    const res = await t.app.inject({
      method: 'POST', url: `/api/v1/devices/${device.id}/subscriptions`, headers: { authorization: app.auth },
      payload: { subscription: { eventType: 'rule-*', url: 'http://127.0.0.1:9/hook', object: { type: 'rule', id: rule.id } } },
    });
    expect(res.statusCode).toBe(201);
    const subscription = res.json().subscription.id;
    const events = await ingest(t, device.id, [insideDepot(1), outsideDepot(2), insideDepot(3), outsideDepot(4), insideDepot(5)]);
    expect(events).toHaveLength(5);
    const rows = await t.db.knex('notifications').where({ subscription_id: subscription }).select('id', 'created_at',
      t.db.knex.raw("created_at = date_trunc('milliseconds', created_at) AS whole_ms"));
    expect(rows.map((r) => r.whole_ms)).toEqual(Array(5).fill(true));
    const stored = await t.db.knex('events').whereIn('id', events.map((e) => e.id))
      .select(t.db.knex.raw("stored = date_trunc('milliseconds', stored) AS whole_ms"));
    expect(stored.map((r) => r.whole_ms)).toEqual(Array(5).fill(true));
    const w = await walk(app.auth, `/api/v1/subscriptions/${subscription}/notifications?limit=2`, (b) => b.notifications.map((n: any) => n.id));
    expectWalk(w, 2, ordered(rows.map((r) => ({ id: r.id, ts: new Date(r.created_at) }))));
  });

  it('the upgrade cuts notification times stored with microseconds to the millisecond, and leaves the others', async () => {
    const { app, device, vehicle } = await setup();
    const { event, subscription } = await subscribedEvent(app, device.id, vehicle.id);
    const [fine, whole] = [randomUUID(), randomUUID()];
    await partitionsFor(t.db.knex, 'notifications', '2026-04-01T12:00:00Z');
    for (const [id, at] of [[fine, '2026-04-01 12:00:00.123456+00'], [whole, '2026-04-01 12:00:00.124+00']]) {
      await t.db.knex('notifications').insert({
        id, event_id: event.id, subscription_id: subscription, application_id: app.id, device_id: device.id,
        url: 'http://127.0.0.1:9/hook', state: 'complete', created_at: t.db.knex.raw('?::timestamptz', [at]),
      });
    }
    await cutNotificationTimes(t.db.knex);
    const rows = await t.db.knex('notifications').whereIn('id', [fine, whole])
      .select('id', t.db.knex.raw("to_char(created_at AT TIME ZONE 'UTC', 'HH24:MI:SS.US') AS at"));
    expect(Object.fromEntries(rows.map((r) => [r.id, r.at]))).toEqual({ [fine]: '12:00:00.123000', [whole]: '12:00:00.124000' });
  });
});
