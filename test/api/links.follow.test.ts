import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { vehicleOverMqtt } from '../helpers/vehicle-over-mqtt.js';

/**
 * Every link resolves: one record of each kind, made by frames over a real gateway and calls to the API, and every
 * URL in its `links` (and in its list's pagination links) fetched with the same credentials answers 200.
 */
let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const T0 = Date.now() - 900_000;
const G = 9.80665;
const ORIGIN = /^https?:\/\/[^/]+/;

type Json = Record<string, unknown>;

/** Every string under a `links` object anywhere in the body, with where it was found. */
function linksOf(body: unknown, at = '$'): [string, string][] {
  if (!body || typeof body !== 'object') return [];
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(body as Json)) {
    if (k === 'links' && v && typeof v === 'object') {
      for (const [name, url] of Object.entries(v as Json)) if (typeof url === 'string') out.push([`${at}.links.${name}`, url]);
    } else {
      out.push(...linksOf(v, `${at}.${k}`));
    }
  }
  return out;
}

describe('links', () => {
  it('every link of one record of each kind, and of its list, answers 200', async () => {
    const s = await vehicleOverMqtt(g, T0, 'VVLNKS');
    const call = async (method: string, url: string, payload?: unknown) => {
      const res = await g.t.app.inject({ method: method as 'GET', url, headers: { authorization: s.app.auth }, payload: payload as Json });
      return { status: res.statusCode, body: res.json() };
    };
    const dev = `/api/v1/devices/${s.device.id}`;
    const veh = `/api/v1/vehicles/${s.vehicleId}`;

    // a rule around the start, a subscription to it and one to startups, a reading and a trigger
    const rule = (await call('POST', `${dev}/rules`, {
      rule: { name: 'depot', boundaries: [{ type: 'radius', lon: -96.8, lat: 32.7, radius: 300 }] },
    })).body.rule;
    for (const subscription of [
      { eventType: 'rule-*', url: 'https://receiver.example.com/hook', object: { type: 'rule', id: rule.id } },
      { eventType: 'startup', url: 'https://receiver.example.com/hook' },
    ]) expect((await call('POST', `${dev}/subscriptions`, { subscription })).status).toBe(201);
    expect((await call('POST', `${veh}/odometers`, { odometer: { reading: 1000, unit: 'km', date: new Date(T0 - 120_000).toISOString() } })).status).toBe(200);
    expect((await call('POST', `${veh}/odometer_triggers`, { odometerTrigger: { type: 'milestone', threshold: 0.5, unit: 'km' } })).status).toBe(200);

    // a drive: startup, out of the fence, a trouble code, a hard stop into a collision, shutdown
    const frame = (i: number, kmh: number, extra: Json = {}) => ({
      id: `f${i}`, ts: T0 + i * 5000, location: { lat: 32.7 + i * 0.0008, lon: -96.8, speed: kmh },
      accel: { maxX: 0.2, minX: -0.2, maxY: 0.1, minY: -0.1, maxZ: G + 0.1, minZ: G - 0.1 }, data: { vehicleSpeed: kmh, rpm: 1800 },
      ...extra,
    });
    await s.publish([{ id: 'on', ts: T0 - 1000, kind: 'startup' }]);
    await s.publish(Array.from({ length: 12 }, (_, i) => frame(i, 50, i === 6 ? { dtcs: ['P0300'] } : {})));
    await s.publish([frame(12, 48, { accel: { maxX: 0.2, minX: -5 * G, maxY: 0.1, minY: -0.1, maxZ: G, minZ: G - 0.1 } })]);
    await s.publish([frame(13, 0), frame(14, 0, { dtcs: [] }), { id: 'off', ts: T0 + 15 * 5000, kind: 'shutdown' }]);

    const lists: Record<string, string> = {
      devices: '/api/v1/devices', device: dev, vehicles: `${dev}/vehicles`, latestVehicle: `${dev}/vehicles/_latest`, vehicle: veh,
      groups: `${dev}/groups`, messages: `${dev}/messages?limit=2`, locations: `${dev}/locations?limit=2`,
      snapshots: `${dev}/snapshots?fields=rpm&limit=2`, events: `${dev}/events?limit=2`, rules: `${dev}/rules`,
      rule: `/api/v1/rules/${rule.id}`, subscriptions: `${dev}/subscriptions`,
      trips: `${dev}/trips?limit=1`, vehicleTrips: `${veh}/trips?limit=1`, reportCards: `${dev}/report_cards?limit=1`,
      overall: `${dev}/report_cards/overall`, codes: `${veh}/codes?limit=1`, collisions: `${dev}/collisions?limit=1`,
      vehicleCollisions: `${veh}/collisions`, odometers: `${veh}/odometers`, triggers: `${veh}/odometer_triggers`,
      distances: `${veh}/distances`, latestDistance: `${veh}/distances/_latest`, transactions: '/api/v1/transactions?limit=2',
      routes: '/api/v1/routes?limit=1', dummies: '/api/v1/dummies',
    };
    const records: Record<string, string> = {};
    const firstIdOf = (body: Json) => {
      for (const v of Object.values(body)) {
        const list = Array.isArray(v) ? v : (v as { features?: unknown[] } | null)?.features;
        const first = list?.[0] as { links?: { self?: string } } | undefined;
        if (first?.links?.self) return first.links.self;
      }
      return null;
    };
    const followed: string[] = [];
    const follow = async (what: string, url: string) => {
      const res = await call('GET', url.replace(ORIGIN, ''));
      expect(res.status, `${what}: ${url} → ${JSON.stringify(res.body).slice(0, 200)}`).toBe(200);
      return res.body as Json;
    };
    const kinds = new Set<string>();
    for (const [name, url] of Object.entries(lists)) {
      const body = await follow(name, url);
      const self = firstIdOf(body);
      if (self) records[name] = self;
      for (const [where, link] of linksOf(body)) {
        followed.push(link);
        kinds.add(`${name}:${where.replace(/\[\d+\]|\.\d+/g, '')}`);
        await follow(`${name} ${where}`, link);
      }
    }
    // one record of each kind, fetched by its self link, and every link it holds
    for (const [name, self] of Object.entries(records)) {
      const body = await follow(`${name} record`, self);
      for (const [where, link] of linksOf(body)) {
        followed.push(link);
        await follow(`${name} record ${where}`, link);
      }
    }
    // the world had one of each: a closed trip, its report card, a code, a collision, notifications, the registration
    for (const name of ['trips', 'reportCards', 'collisions', 'odometers', 'triggers', 'events', 'rules', 'subscriptions']) {
      expect(records[name], `a ${name} record`).toBeTruthy();
    }
    // an occurrence has no self link: its links (code, device, vehicle) were followed from the list
    expect(kinds).toContain('codes:$.codes.links.code');
    const [trip] = (await call('GET', `${dev}/trips?limit=1`)).body.trips;
    expect(trip.status).toBe('completed');
    expect(Object.keys(trip.links).sort()).toEqual(
      ['device', 'events', 'locations', 'messages', 'reportCard', 'self', 'snapshots', 'vehicle']);
    const [subscription] = (await call('GET', `${dev}/subscriptions`)).body.subscriptions;
    const notifications = await follow('notifications', `/api/v1/subscriptions/${subscription.id}/notifications`);
    for (const [where, link] of linksOf(notifications)) await follow(`notification ${where}`, link);
    expect(followed.length).toBeGreaterThan(60);
  });

  it("answers the registration record's groups link with the device's groups (none)", async () => {
    const s = await vehicleOverMqtt(g, T0, 'VVGRPS');
    const res = await g.t.get(`/api/v1/devices/${s.device.id}/groups`, s.app.auth);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ groups: [], meta: { pagination: { total: 0 } } });
    const other = await g.t.make.application();
    expect((await g.t.get(`/api/v1/devices/${s.device.id}/groups`, other.auth)).statusCode).toBe(404);
  });

  it("leaves an open trip's reportCard link out, and gives its snapshots link a field selection", async () => {
    const s = await vehicleOverMqtt(g, T0, 'VVTRPS');
    await s.publish([{ id: 'on', ts: T0, kind: 'startup' },
      ...Array.from({ length: 4 }, (_, i) => ({ id: `m${i}`, ts: T0 + (i + 1) * 5000, location: { lat: 32.7 + i * 0.001, lon: -96.8, speed: 40 }, data: { vehicleSpeed: 40 } }))]);
    const [trip] = (await s.get(`/api/v1/devices/${s.device.id}/trips?limit=1`)).body.trips;
    expect(trip.status).toBe('started');
    expect(trip.links).not.toHaveProperty('reportCard');
    const snapshots = await s.get(trip.links.snapshots.replace(ORIGIN, ''));
    expect(snapshots.status).toBe(200);
    expect(snapshots.body.snapshots).toHaveLength(4);
    expect(snapshots.body.snapshots[0].data).toMatchObject({ vehicleSpeed: 40 });
    // the SDK's trip.snapshots({all, fields}) appends its own fields to the link: the last one counts
    const narrowed = await s.get(`${trip.links.snapshots.replace(ORIGIN, '')}&fields=rpm`);
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.snapshots).toEqual([]);
  });
});
