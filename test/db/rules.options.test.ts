import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { at, createRule, DEPOT, ingest, metersNorth, type TestMessage } from './rules.fixtures.js';
import type { NewRule } from '../../db/rules/types.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

/** A position `meters` north (negative: south) and `east` meters east of the depot. */
const near = (s: number, meters: number, east = 0, data?: Record<string, unknown>): TestMessage =>
  ({ ts: at(s), lon: DEPOT.lon + east / (111_000 * Math.cos((DEPOT.lat * Math.PI) / 180)), lat: metersNorth(DEPOT.lat, meters), data });
const speed = (s: number, v: number): TestMessage => ({ ts: at(s), data: { vehicleSpeed: v } });
const fence = (extra: Record<string, unknown> = {}) => ({ type: 'radius' as const, lon: DEPOT.lon, lat: DEPOT.lat, radius: 50, ...extra });

/** A rule's stored events, oldest first: type, firstEval, seconds after at(0), and what the options add to meta. */
async function trail(ruleId: string) {
  const rows = await t.db.knex('events').select('event_type', 'meta', 'ts').where({ object_type: 'rule', object_id: ruleId }).orderBy('ts');
  return rows.map((r: { event_type: string; meta: Record<string, any>; ts: Date }) => [
    r.event_type, r.meta.firstEval, (new Date(r.ts).getTime() - at(0).getTime()) / 1000,
    ...(r.meta.dwellSeconds !== undefined ? [`dwell ${r.meta.dwellSeconds}`] : []),
    ...(r.meta.crossing ? ['crossing'] : []),
  ]);
}

/** A device with `rule`, fed `batches` one ingest batch at a time; its rule's events. */
async function feed(rule: NewRule, batches: TestMessage[][]) {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  const created = await createRule(t, app, device.id, rule);
  for (const batch of batches) await ingest(t, device.id, batch);
  const state = await t.db.knex('rule_states').where({ rule_id: created.id }).first();
  return { rule: created, trail: await trail(created.id), state: { evaluated: state.evaluated, covered: state.covered } };
}

/** A seeded shuffle of the messages into batches of 1 to 4, in a random order of batches. */
function shuffled(messages: TestMessage[], seed: number): TestMessage[][] {
  let x = seed;
  const random = () => { x = (x * 1_103_515_245 + 12_345) % 2 ** 31; return x / 2 ** 31; };
  const pool = [...messages];
  for (let i = pool.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  const batches: TestMessage[][] = [];
  while (pool.length) batches.push(pool.splice(0, 1 + Math.floor(random() * 4)));
  return batches;
}

/** The in-order run's events and state, and the same for several shuffled runs, which must agree with it. */
async function agreesShuffled(rule: NewRule, messages: TestMessage[], seeds = [1, 2, 3, 4]) {
  const ordered = await feed(rule, [messages]);
  for (const seed of seeds) {
    const run = await feed(rule, shuffled(messages, seed));
    expect({ seed, trail: run.trail, state: run.state }).toEqual({ seed, trail: ordered.trail, state: ordered.state });
  }
  return ordered;
}

/** A drive along the fence's edge: in and out every few seconds, then 30 s inside, then away. */
const edge = [
  ...Array.from({ length: 12 }, (_, i) => near(i * 2, i % 3 === 2 ? 10 : 80)), // in at 4, 10, 16, 22 s, out between
  ...Array.from({ length: 16 }, (_, i) => near(24 + i * 2, 10)), // inside from 24 to 54 s
  near(56, 200), near(58, 200), near(70, 200),
];

describe('rule options', () => {
  describe('dwell', () => {
    it('flaps along a fence edge without dwell, and gives one enter and one leave with minInsideSeconds 20', async () => {
      const flapping = await feed({ name: 'edge', boundaries: [fence()] }, [edge]);
      expect(flapping.trail.length).toBeGreaterThanOrEqual(6);
      const dwelling = await feed({ name: 'edge', boundaries: [fence()], minInsideSeconds: 20 }, [edge]);
      // the first evaluation outside (no dwell before a leave), then the stay of more than 30 s, stamped where it began
      expect(dwelling.trail).toEqual([['rule-leave', true, 0], ['rule-enter', false, 22, 'dwell 20'], ['rule-leave', false, 56]]);
    });

    it('holds an enter back until a later batch shows the dwell, then stamps it when the device crossed', async () => {
      const app = await t.make.application();
      const device = await t.make.device(app.principal);
      const rule = await createRule(t, app, device.id, { name: 'dwell', boundaries: [fence()], minInsideSeconds: 20 });
      expect((await ingest(t, device.id, [near(0, 10), near(10, 10)])).map((e) => e.eventType)).toEqual([]);
      const [state] = await t.db.knex('rule_states').select('evaluated').where('rule_id', rule.id);
      expect(state.evaluated).toBe(false);
      const confirmed = await ingest(t, device.id, [near(20, 10)]);
      expect(confirmed.map((e) => [e.eventType, e.timestamp.getTime() - at(0).getTime()])).toEqual([['rule-enter', 0]]);
      expect(confirmed[0].meta).toMatchObject({ firstEval: true, dwellSeconds: 20, message: { timestamp: at(0).toISOString() } });
      expect(await ingest(t, device.id, [near(30, 10)])).toEqual([]);
    });

    it('waits minOutsideSeconds before a leave, and a short excursion outside gives nothing', async () => {
      const path = [near(0, 10), near(10, 10), near(20, 200), near(25, 200), near(30, 10), near(40, 200), near(80, 200)];
      const { trail: events } = await feed({ name: 'out', boundaries: [fence()], minOutsideSeconds: 30 }, [path]);
      expect(events).toEqual([['rule-enter', true, 0], ['rule-leave', false, 40, 'dwell 30']]);
    });

    it('gives the in-order events for frames arriving in shuffled batches', async () => {
      await agreesShuffled({ name: 'edge', boundaries: [fence()], minInsideSeconds: 20 }, edge);
      await agreesShuffled({ name: 'both', boundaries: [fence()], minInsideSeconds: 5, minOutsideSeconds: 7 }, edge);
    });
  });

  describe('hysteresis', () => {
    const speeds = [110, 121, 118, 122, 116, 114, 121, 119, 100];
    const drive = speeds.map((v, i) => speed(i * 5, v));

    it('leaves a speed rule only below min − deadband', async () => {
      const plain = await feed({ name: 'fast', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 120, max: null }] }, [drive]);
      expect(plain.trail.map((e) => e[0])).toEqual(['rule-leave', 'rule-enter', 'rule-leave', 'rule-enter', 'rule-leave', 'rule-enter', 'rule-leave']);
      const banded = await feed({ name: 'fast', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 120, max: null, deadband: 5 }] }, [drive]);
      expect(banded.trail).toEqual([['rule-leave', true, 0], ['rule-enter', false, 5], ['rule-leave', false, 25], ['rule-enter', false, 30], ['rule-leave', false, 40]]);
    });

    it('leaves a radius rule only beyond radius + bufferMeters, and does not evaluate in the band', async () => {
      const path = [near(0, 70), near(5, 10), near(10, 60), near(15, 10), near(20, 75), near(25, 100), near(30, 60), near(35, 40)];
      const { trail: events } = await feed({ name: 'buffered', boundaries: [fence({ bufferMeters: 30 })] }, [path]);
      expect(events).toEqual([['rule-enter', true, 5], ['rule-leave', false, 25], ['rule-enter', false, 35]]);
      await agreesShuffled({ name: 'buffered', boundaries: [fence({ bufferMeters: 30 })] }, path);
      await agreesShuffled({ name: 'fast', boundaries: [{ type: 'parametric', parameter: 'vehicleSpeed', min: 120, max: null, deadband: 5 }] }, drive);
    });
  });

  describe('corridor', () => {
    const line = [[DEPOT.lon, DEPOT.lat], [DEPOT.lon, metersNorth(DEPOT.lat, 1000)]];
    const corridor = { name: 'route', boundaries: [{ type: 'corridor' as const, coordinates: line, widthMeters: 50 }] };

    it('is inside within widthMeters of the line, and leaving it is a rule-leave', async () => {
      const path = [near(0, 0), near(10, 300, 30), near(20, 600, -45), near(30, 800, 120), near(40, 900, 10), near(50, 1100)];
      const { trail: events, rule } = await feed(corridor, [path]);
      expect(events).toEqual([['rule-enter', true, 0], ['rule-leave', false, 30], ['rule-enter', false, 40], ['rule-leave', false, 50]]);
      expect(rule.boundaries[0]).toMatchObject({ type: 'corridor', coordinates: line, widthMeters: 50 });
      await agreesShuffled(corridor, path);
    });
  });

  describe('crossings between fixes', () => {
    const through = [near(0, -500), near(45, 500), near(90, 1500)];
    const radius100 = { type: 'radius' as const, lon: DEPOT.lon, lat: DEPOT.lat, radius: 100 };

    it('gives the enter and leave a segment through a 200 m fence implies, and none without detectCrossings', async () => {
      const without = await feed({ name: 'sparse', boundaries: [radius100] }, [through]);
      expect(without.trail).toEqual([['rule-leave', true, 0]]);
      const { trail: events, rule } = await feed({ name: 'sparse', boundaries: [radius100], detectCrossings: true }, [through]);
      // the fence spans 400..600 m of the 1,000 m segment from 0 s to 45 s: 18 s to 27 s
      expect(events.map((e) => e.slice(0, 2))).toEqual([['rule-leave', true], ['rule-enter', false], ['rule-leave', false]]);
      expect(events[1][2]).toBeCloseTo(18, 0);
      expect(events[2][2]).toBeCloseTo(27, 0);
      expect(events[1][3]).toBe('crossing');
      const [enter] = await t.db.knex('events').select('meta').where({ object_id: rule.id, event_type: 'rule-enter' });
      expect(enter.meta.crossing).toEqual({ interpolated: true, from: { id: expect.any(String), timestamp: at(0).toISOString() }, to: { id: enter.meta.message.id, timestamp: at(45).toISOString() } });
      expect(enter.meta.message.timestamp).toBe(at(45).toISOString());
    });

    it('crosses polygons and corridors too, with dwell, and agrees with shuffled batches', async () => {
      const square = [[[DEPOT.lon - 0.001, DEPOT.lat - 0.001], [DEPOT.lon + 0.001, DEPOT.lat - 0.001], [DEPOT.lon + 0.001, DEPOT.lat + 0.001],
        [DEPOT.lon - 0.001, DEPOT.lat + 0.001], [DEPOT.lon - 0.001, DEPOT.lat - 0.001]]];
      const crossRoad = [[DEPOT.lon - 0.01, DEPOT.lat], [DEPOT.lon + 0.01, DEPOT.lat]];
      const path = [near(0, -500), near(45, 500), near(90, 1500), near(135, 10), near(180, -800), near(225, -900)];
      for (const boundary of [radius100, { type: 'polygon' as const, coordinates: square }, { type: 'corridor' as const, coordinates: crossRoad, widthMeters: 40 }]) {
        const ordered = await agreesShuffled({ name: boundary.type, boundaries: [boundary], detectCrossings: true }, path);
        expect(ordered.trail.filter((e) => e[0] === 'rule-enter')).toHaveLength(2);
      }
      await agreesShuffled({ name: 'dwell', boundaries: [radius100], detectCrossings: true, minInsideSeconds: 5 }, path);
    });
  });

  describe('schedules', () => {
    // at(0) is Thursday 2026-01-15 12:00 UTC, 13:00 in Paris; the window is 08:00 to 14:00 on weekdays
    const hours = { timeZone: 'Europe/Paris', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'] as const, from: '08:00', until: '14:00' }] };
    const rule = { name: 'office hours', boundaries: [fence()], activeHours: { ...hours, windows: hours.windows.map((w) => ({ ...w, days: [...w.days] })) } };
    const hour = 3600;

    it('reads only messages inside its windows, and reports at the window\'s opening what changed while closed', async () => {
      const path = [near(0, 10), near(0.5 * hour, 200), near(hour + 60, 10), near(2 * hour, 200), near(19 * hour + 60, 200), near(20 * hour, 10)];
      const { trail: events } = await feed(rule, [path]);
      // 13:00 in; 13:30 out; 14:01 and 15:00 are after hours; Friday 08:01 (19 h 1 min later) out: nothing new; 09:00 in
      expect(events).toEqual([['rule-enter', true, 0], ['rule-leave', false, 0.5 * hour], ['rule-enter', false, 20 * hour]]);
      await agreesShuffled(rule, path);
    });
  });

  it('agrees with shuffled batches for a rule with every option, over a drive with and without fixes', async () => {
    let x = 7;
    const random = () => { x = (x * 1_103_515_245 + 12_345) % 2 ** 31; return x / 2 ** 31; };
    const drive = Array.from({ length: 40 }, (_, i): TestMessage => {
      const s = i * 20 + Math.floor(random() * 10);
      const data = { vehicleSpeed: Math.round(30 + random() * 40) };
      return random() < 0.2 ? { ts: at(s), data } : near(s, Math.round(-300 + random() * 600), Math.round(-100 + random() * 200), data);
    });
    const all = {
      name: 'every option', minInsideSeconds: 15, minOutsideSeconds: 25, detectCrossings: true,
      boundaries: [fence({ radius: 120, bufferMeters: 20 }), { type: 'parametric' as const, parameter: 'vehicleSpeed', min: 45, max: null, deadband: 5 }],
    };
    const ordered = await agreesShuffled(all, drive, [11, 12, 13, 14, 15, 16]);
    expect(ordered.trail.length).toBeGreaterThan(2);
  });

  it('keeps a rule without options as the spec has it: no option fields in its copy or its events', async () => {
    const { rule, trail: events } = await feed({ name: 'plain', boundaries: [fence()] }, [[near(0, 10)]]);
    expect(Object.keys(rule).sort()).toEqual(['applicationId', 'boundaries', 'covered', 'createdAt', 'deviceId', 'evaluated', 'id', 'name']);
    expect(events).toEqual([['rule-enter', true, 0]]);
  });
});

describe('migration 038', () => {
  it('goes down and up again keeping the rules without options, their states and events, which go on evaluating', async () => {
    const m038 = await import('../../db/migrations/038_rule_options.js');
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const rule = await createRule(t, app, device.id, { name: 'depot', boundaries: [fence()] });
    await ingest(t, device.id, [near(0, 10), near(10, 200)]);
    const before = await trail(rule.id);
    await m038.down(t.db.knex);
    expect((await t.db.knex('rule_state_log').where('rule_id', rule.id)).map((r) => Object.keys(r).sort()))
      .toEqual([['message_id', 'rule_id', 'states', 'ts'], ['message_id', 'rule_id', 'states', 'ts']]);
    await m038.up(t.db.knex);
    expect(await trail(rule.id)).toEqual(before);
    await ingest(t, device.id, [near(20, 10)]);
    expect(await trail(rule.id)).toEqual([...before, ['rule-enter', false, 20]]);
  });
});
