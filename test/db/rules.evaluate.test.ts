import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { at, createRule, ingest, metersNorth, ruleEventTrail } from './rules.fixtures.js';
import { ruleCopy, urlForConfig } from '../../db/rules/rule-copy.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const LON = -96.7970;
const LAT = 32.7767;
const radius50 = { type: 'radius' as const, lon: LON, lat: LAT, radius: 50 };
const square = (lon: number, lat: number, d: number) =>
  [[[lon - d, lat - d], [lon + d, lat - d], [lon + d, lat + d], [lon - d, lat + d], [lon - d, lat - d]]];

async function setup() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  return { app, device };
}

describe('rule evaluation', () => {
  it('gives a firstEval enter inside a 50 m radius and a leave 200 m away', async () => {
    const { app, device } = await setup();
    const rule = await createRule(t, app, device.id, { name: 'depot', boundaries: [radius50] });
    const first = await ingest(t, device.id, [{ ts: at(0), lon: LON, lat: metersNorth(LAT, 10), data: { vehicleSpeed: 12 } }]);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      deviceId: device.id, vehicleId: null, applicationId: app.id, timestamp: at(0), eventType: 'rule-enter',
      objectType: 'rule', objectId: rule.id,
    });
    const meta = first[0].meta as any;
    expect(meta.direction).toBe('enter');
    expect(meta.firstEval).toBe(true);
    expect(meta.rule).toEqual({
      id: rule.id, name: 'depot', deviceId: device.id,
      boundaries: [{ id: rule.boundaries[0].id, type: 'radius', lon: LON, lat: LAT, radius: 50 }],
      evaluated: true, covered: true, createdAt: rule.createdAt.toISOString(),
      object: { id: device.id, type: 'device' },
      links: {
        self: `http://localhost:3999/api/v1/rules/${rule.id}`,
        events: `http://localhost:3999/api/v1/devices/${device.id}/events?type=rule-*&objectId=${rule.id}`,
        subscriptions: `http://localhost:3999/api/v1/devices/${device.id}/subscriptions?objectType=rule&objectId=${rule.id}`,
      },
    });
    expect(meta.message.timestamp).toBe(at(0).toISOString());
    expect(meta.message.snapshot).toEqual({ location: { lat: metersNorth(LAT, 10), lon: LON }, vehicleSpeed: 12 });

    const second = await ingest(t, device.id, [
      { ts: at(5), lon: LON, lat: metersNorth(LAT, 20) },
      { ts: at(10), lon: LON, lat: metersNorth(LAT, 200) },
    ]);
    expect(second.map((e) => [e.eventType, (e.meta as any).firstEval, e.timestamp])).toEqual([['rule-leave', false, at(10)]]);
    expect((second[0].meta as any).rule).toMatchObject({ evaluated: true, covered: false });
    expect(await t.repos.rules.getById(rule.id)).toMatchObject({ evaluated: true, covered: false });
  });

  it('gives an enter when a message lands inside a polygon, and nothing for messages without a location', async () => {
    const { app, device } = await setup();
    const rule = await createRule(t, app, device.id, { name: 'yard', boundaries: [{ type: 'polygon', coordinates: square(LON, LAT, 0.001) }] });
    expect(await ingest(t, device.id, [{ ts: at(0), data: { rpm: 900 } }])).toEqual([]);
    const outside = await ingest(t, device.id, [{ ts: at(5), lon: LON + 0.002, lat: LAT }]);
    expect(outside.map((e) => [e.eventType, (e.meta as any).firstEval])).toEqual([['rule-leave', true]]);
    const inside = await ingest(t, device.id, [{ ts: at(10), lon: LON + 0.0005, lat: LAT - 0.0005 }, { ts: at(15), data: { rpm: 800 } }]);
    expect(inside.map((e) => [e.eventType, (e.meta as any).firstEval, e.timestamp])).toEqual([['rule-enter', false, at(10)]]);
    expect(await t.repos.rules.getById(rule.id)).toMatchObject({ evaluated: true, covered: true });
  });

  it('enters above a vehicleSpeed minimum of 100, keeps the state without the parameter, leaves below', async () => {
    const { app, device } = await setup();
    const rule = await createRule(t, app, device.id, { name: 'fast', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 100, max: null }] });
    const events = await ingest(t, device.id, [
      { ts: at(0), data: { vehicleSpeed: 120 } },
      { ts: at(5), data: { rpm: 3000 } },
      { ts: at(10), lon: LON, lat: LAT, data: { vehicleSpeed: 99.5 } },
      { ts: at(15), data: { vehicleSpeed: 100 } },
    ]);
    expect(events.map((e) => [e.eventType, (e.meta as any).firstEval, e.timestamp])).toEqual([
      ['rule-enter', true, at(0)], ['rule-leave', false, at(10)], ['rule-enter', false, at(15)],
    ]);
    expect((events[1].meta as any).message.snapshot).toEqual({ location: { lat: LAT, lon: LON }, vehicleSpeed: 99.5 });
    expect(await t.repos.rules.getById(rule.id)).toMatchObject({ evaluated: true, covered: true });
  });

  // A parametric rule reads its parameter's slot (db/message-data.sql.ts); a speed that is not a number is not in it
  // and says nothing.
  it('reads vehicleSpeed from its slot, and a speed that is not a number says nothing', async () => {
    const trail = async () => {
      const { app, device } = await setup();
      await createRule(t, app, device.id, { name: 'band', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 50, max: 90.5 }] });
      const events = await ingest(t, device.id, [
        { ts: at(0), data: { vehicleSpeed: 40 } }, { ts: at(5), data: { vehicleSpeed: 'n/a' } }, { ts: at(10), data: { vehicleSpeed: 90.5 } },
        { ts: at(15), data: { vehicleSpeed: '95' } }, { ts: at(20), data: { vehicleSpeed: 90.51 } },
      ]);
      return events.map((e) => [e.eventType, (e.meta as any).firstEval, e.timestamp]);
    };
    const expected = [['rule-leave', true, at(0)], ['rule-enter', false, at(10)], ['rule-leave', false, at(20)]];
    expect(await trail()).toEqual(expected);
  });

  it('gives a firstEval leave when the first known value is outside a max-only range', async () => {
    const { app, device } = await setup();
    await createRule(t, app, device.id, { name: 'idle', boundaries: [{ type: 'parametric', parameter: 'rpm', min: null, max: 1000 }] });
    const events = await ingest(t, device.id, [{ ts: at(0), data: { rpm: 2500 } }, { ts: at(5), data: { rpm: 800 } }]);
    expect(events.map((e) => [e.eventType, (e.meta as any).firstEval])).toEqual([['rule-leave', true], ['rule-enter', false]]);
  });

  it('does not evaluate a parametric + radius rule until both boundaries are known', async () => {
    const { app, device } = await setup();
    const rule = await createRule(t, app, device.id, {
      name: 'fast near depot', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 50, max: null }, radius50],
    });
    expect(await ingest(t, device.id, [{ ts: at(0), lon: LON, lat: LAT }, { ts: at(5), data: { rpm: 2000 } }])).toEqual([]);
    expect(await t.repos.rules.getById(rule.id)).toMatchObject({ evaluated: false, covered: false });
    const events = await ingest(t, device.id, [{ ts: at(10), data: { vehicleSpeed: 60 } }, { ts: at(15), data: { vehicleSpeed: 40 } }]);
    expect(events.map((e) => [e.eventType, (e.meta as any).firstEval, e.timestamp])).toEqual([
      ['rule-enter', true, at(10)], ['rule-leave', false, at(15)],
    ]);
    expect((events[0].meta as any).message.snapshot).toEqual({ vehicleSpeed: 60 });
    const [state] = await t.db.knex('rule_states').select('states', 'evaluated', 'covered').where('rule_id', rule.id);
    expect([state.states, state.evaluated, state.covered]).toEqual([[false, true], true, false]);
  });

  it('evaluates every rule of the device in one batch, each for its own application', async () => {
    const { app, device } = await setup();
    const other = await t.make.application('consumer');
    await t.repos.devices.authorize(device.id, other.id);
    const a = await createRule(t, app, device.id, { name: 'a', boundaries: [radius50] });
    const b = await createRule(t, other, device.id, { name: 'b', boundaries: [{ type: 'parametric', parameter: 'rpm', min: 500, max: 4000 }] });
    const events = await ingest(t, device.id, [{ ts: at(0), lon: LON, lat: LAT, data: { rpm: 700 } }]);
    expect(events.map((e) => [e.objectId, e.applicationId, e.eventType]).sort()).toEqual([
      [a.id, app.id, 'rule-enter'], [b.id, other.id, 'rule-enter'],
    ].sort());
  });

  it('attributes a rule event to the vehicle the device was in at the message time', async () => {
    const { app, device } = await setup();
    const vehicle = await t.repos.vehicles.upsertByVin('1HGCM82633A004352', async () => ({ make: 'Honda' }));
    await t.repos.vehicles.associate(device.id, vehicle.id, at(-60));
    await createRule(t, app, device.id, { name: 'depot', boundaries: [radius50] });
    const [event] = await ingest(t, device.id, [{ ts: at(0), lon: LON, lat: LAT }]);
    expect(event.vehicleId).toBe(vehicle.id);
  });

  it('does nothing for a device without rules and ignores messages stored before a rule existed', async () => {
    const { app, device } = await setup();
    expect(await ingest(t, device.id, [{ ts: at(0), lon: LON, lat: LAT }])).toEqual([]);
    const rule = await createRule(t, app, device.id, { name: 'depot', boundaries: [radius50] });
    const [event] = await ingest(t, device.id, [{ ts: at(-30), data: { rpm: 900 } }, { ts: at(5), lon: LON, lat: LAT }]);
    expect([event.eventType, (event.meta as any).firstEval, event.timestamp]).toEqual(['rule-enter', true, at(5)]);
    expect(await ruleEventTrail(t, rule.id)).toEqual([['rule-enter', true, at(5).toISOString()]]);
  });

  it('evaluates a rule of one boundary (no grid) as the same rule with that boundary twice, live and late', async () => {
    // A rule of one boundary takes its change points straight from the boundary's answers; one with two goes through
    // the grid that carries every boundary's last answer. The same boundary twice must give the same events and log.
    const { app, device } = await setup();
    const one = await createRule(t, app, device.id, { name: 'one', boundaries: [radius50] });
    const two = await createRule(t, app, device.id, { name: 'two', boundaries: [radius50, radius50] });
    const inside = (s: number) => ({ ts: at(s), lon: LON, lat: metersNorth(LAT, 10) });
    const outside = (s: number) => ({ ts: at(s), lon: LON, lat: metersNorth(LAT, 200) });
    await ingest(t, device.id, [{ ts: at(0), data: { rpm: 900 } }, outside(5), outside(10)]);
    await ingest(t, device.id, [inside(20), { ts: at(25), data: { rpm: 900 } }, inside(30), outside(40)]);
    await ingest(t, device.id, [inside(50)]);
    // late: inside before the stored leave at 40, outside before the enter at 20
    await ingest(t, device.id, [inside(35), outside(15)]);
    await ingest(t, device.id, [outside(60), inside(70)]);
    const trail = await ruleEventTrail(t, one.id);
    expect(trail.length).toBeGreaterThanOrEqual(5);
    expect(trail[0]).toEqual(['rule-leave', true, at(5).toISOString()]);
    expect(await ruleEventTrail(t, two.id)).toEqual(trail);
    const log = async (id: string) => (await t.db.knex('rule_state_log').select('ts', 'message_id', 'states').where('rule_id', id).orderBy(['ts', 'message_id']))
      .map((r: any) => [new Date(r.ts).toISOString(), r.message_id, r.states[0]]);
    expect(await log(two.id)).toEqual(await log(one.id));
    const state = async (id: string) => (await t.db.knex('rule_states').select('evaluated', 'covered').where('rule_id', id))[0];
    expect(await state(two.id)).toEqual(await state(one.id));
    expect(await state(one.id)).toEqual({ evaluated: true, covered: true });
  });

  // A rule keeps its boundaries' copy (migration 029); one stored without it (by an older gateway) has it built per event.
  it.each([['its stored copy of the boundaries', false], ['boundaries built at the event (no stored copy)', true]])(
    'stores in the event the rule copy GET /rules/{id} gives, for every boundary type, and the message snapshot: %s', async (_, withoutCopy) => {
    const { app, device } = await setup();
    const rule = await createRule(t, app, device.id, {
      name: 'every kind', boundaries: [
        { type: 'parametric', parameter: 'vehicleSpeed', min: null, max: 130.5 },
        { type: 'polygon', coordinates: square(LON, LAT, 0.001) },
        radius50,
      ],
    });
    if (withoutCopy) await t.db.knex('rules').update({ boundaries: null }).where('id', rule.id);
    const [event] = await ingest(t, device.id, [{ ts: at(0), lon: LON, lat: LAT, data: { vehicleSpeed: 42.25, accel: { maxX: 0.5 } } }]);
    const meta = event.meta as any;
    const copy = ruleCopy(urlForConfig(t.config), { ...(await t.repos.rules.getById(rule.id))!, evaluated: true, covered: true });
    expect(meta.rule).toEqual(JSON.parse(JSON.stringify(copy)));
    expect(meta).toMatchObject({ direction: 'enter', firstEval: true });
    expect(meta.message).toEqual({
      id: (await t.db.knex('messages').select('id').where({ device_id: device.id }).first()).id,
      timestamp: at(0).toISOString(),
      snapshot: { location: { lat: LAT, lon: LON }, vehicleSpeed: 42.25, accel: { maxX: 0.5 } },
    });
  });

  it('writes the rule\'s state when it changes, not for every batch of its device (migration 016)', async () => {
    const { app, device } = await setup();
    const rule = await createRule(t, app, device.id, { name: 'depot', boundaries: [radius50] });
    const state = async () => (await t.db.knex('rule_states').select('covered', 'updated_at').where('rule_id', rule.id))[0];
    await ingest(t, device.id, [{ ts: at(0), lon: LON, lat: LAT }]);
    const entered = await state();
    expect(entered.covered).toBe(true);
    expect(await ingest(t, device.id, [{ ts: at(5), lon: LON, lat: LAT }, { ts: at(10), data: { rpm: 900 } }])).toEqual([]);
    expect(await state()).toEqual(entered);
    await ingest(t, device.id, [{ ts: at(15), lon: LON, lat: metersNorth(LAT, 200) }]);
    expect((await state()).covered).toBe(false);
  });
});
