import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { rulesStage } from '../../gateway/stages/rules.stage.js';
import { recordStatements } from '../helpers/statements.js';
import { at, createRule, DEPOT, depotRule, insideDepot, outsideDepot, storeBatch, type TestMessage } from './rules.fixtures.js';
import { RULES_SQL } from '../../db/rules/evaluate.sql.js';
import type { NewRule } from '../../db/rules/types.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const depot = depotRule;
const fast = { name: 'fast', boundaries: [{ type: 'parametric' as const, parameter: 'vehicleSpeed', min: 80, max: null }] };
const inside = (s: number, speed = 10): TestMessage => insideDepot(s, { vehicleSpeed: speed });
const outside = (s: number, speed = 90): TestMessage => outsideDepot(s, { vehicleSpeed: speed });

/** Runs the rules stage over one batch holding `batch[device]` for each device; returns its events and statement count. */
async function stage(devices: { id: string }[], batch: (i: number) => TestMessage[]) {
  return t.db.knex.transaction(async (trx: Knex) => {
    const input: Awaited<ReturnType<typeof storeBatch>>[] = [];
    for (const [i, d] of devices.entries()) input.push(await storeBatch(t, trx, d.id, batch(i)));
    const { result, sql } = await recordStatements(t.db.knex, () => rulesStage({ config: t.config }).apply({ trx, devices: input }));
    return { events: result.stored, statements: sql.length };
  });
}

/** Rules with every option: dwell, hysteresis, a corridor, crossings between fixes and a schedule. */
const withOptions: NewRule[] = [
  { ...depot, minInsideSeconds: 5, minOutsideSeconds: 5, detectCrossings: true, boundaries: [{ ...depot.boundaries[0], bufferMeters: 20 }] },
  { name: 'lane', detectCrossings: true, minInsideSeconds: 3,
    boundaries: [{ type: 'corridor' as const, coordinates: [[DEPOT.lon - 0.01, DEPOT.lat], [DEPOT.lon + 0.01, DEPOT.lat]], widthMeters: 30 }] },
  { ...fast, boundaries: [{ ...fast.boundaries[0], deadband: 5 }],
    activeHours: { timeZone: 'Europe/Paris', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], from: '00:00', until: '00:00' }] } },
];

async function fleet(n: number, rules: NewRule[] = [depot, fast]) {
  const app = await t.make.application();
  const devices = [];
  for (let i = 0; i < n; i++) {
    const device = await t.make.device(app.principal);
    for (const rule of rules) await createRule(t, app, device.id, rule);
    devices.push(device);
  }
  return devices;
}

describe('rules stage, set-based per batch', () => {
  it('runs the same number of statements for 1 device as for 12, live and with late frames', async () => {
    const one = await fleet(1);
    const twelve = await fleet(12);
    const live = (s: number) => () => [inside(s), outside(s + 10)];
    const [a, b] = [await stage(one, live(0)), await stage(twelve, live(0))];
    expect(a.events).toHaveLength(4); // per device: depot enter (first) then leave; fast leave (first) then enter
    expect(b.events).toHaveLength(48);
    expect(b.statements).toBe(a.statements);
    // A late frame at 5 s (outside) recomputes each device's span: same statements again.
    const late = () => [outside(5)];
    const [c, d] = [await stage(one, late), await stage(twelve, late)];
    expect(c.events.map((e) => e.eventType).sort()).toEqual(['rule-enter', 'rule-leave']);
    expect(d.events).toHaveLength(24);
    expect(d.statements).toBe(c.statements);
  });

  it('runs the same number of statements for 1 device as for 12 with rules of every option, live and with late frames', async () => {
    const one = await fleet(1, withOptions);
    const twelve = await fleet(12, withOptions);
    const live = (s: number) => () => [inside(s), outside(s + 10), inside(s + 20), outside(s + 30)];
    const [a, b] = [await stage(one, live(0)), await stage(twelve, live(0))];
    expect(a.events.length).toBeGreaterThan(0);
    expect(b.events).toHaveLength(12 * a.events.length);
    expect(b.statements).toBe(a.statements);
    const late = () => [outside(5), inside(25)];
    const [c, d] = [await stage(one, late), await stage(twelve, late)];
    expect(d.events).toHaveLength(12 * c.events.length);
    expect(d.statements).toBe(c.statements);
  });

  it('reads messages through the device and time index only, for rules of every option', async () => {
    const [device] = await fleet(1, withOptions);
    await stage([device], () => [inside(0), outside(10)]);
    const rules = await t.db.knex('rules').select('id').where('device_id', device.id);
    const plan = await t.db.knex.transaction(async (trx) => {
      await trx.raw('SET LOCAL enable_seqscan = off');
      const bindings = [rules.map((r) => r.id), rules.map(() => at(5).toISOString()), rules.map(() => true), rules.map(() => at(-60).toISOString()), 'a', 'b', 'c', null];
      const { rows } = await trx.raw(`EXPLAIN ${RULES_SQL}`, bindings as never);
      return (rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
    });
    const reads = [...plan.matchAll(/(Seq Scan|Index Scan|Index Only Scan|Bitmap Heap Scan)(?: Backward)?(?: using \S+)? on (messages\S*)/g)];
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.filter((r) => r[1] === 'Seq Scan')).toEqual([]);
  });

  it('gives each device its own transitions in one batch', async () => {
    const devices = await fleet(3);
    const { events } = await stage(devices, (i) => (i === 1 ? [outside(0), inside(10)] : [inside(0)]));
    const trail = (id: string) => events.filter((e) => e.deviceId === id).map((e) => `${e.eventType}@${e.timestamp.getTime() - at(0).getTime()}`).sort();
    expect(trail(devices[0].id)).toEqual(['rule-enter@0', 'rule-leave@0']);
    expect(trail(devices[1].id)).toEqual(['rule-enter@0', 'rule-enter@10000', 'rule-leave@0', 'rule-leave@10000']);
    expect(trail(devices[2].id)).toEqual(['rule-enter@0', 'rule-leave@0']);
  });
});
