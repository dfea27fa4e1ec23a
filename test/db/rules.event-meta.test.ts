import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import * as m027 from '../../db/migrations/027_rule_event_meta.js';
import * as m029 from '../../db/migrations/029_rule_boundaries_copy.js';
import { copyBoundaries } from '../../db/migrations/038_rule_options.js';
import { presentBoundary } from '../../db/rules/rule-copy.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

const types = async () => (await t.db.knex.raw(`SELECT typname FROM pg_type WHERE typname LIKE 'rule_event_%' AND typtype = 'c'
  ORDER BY typname`)).rows.map((r: any) => r.typname as string);

const A = '00000000-0000-4000-8000-000000000001', B = '00000000-0000-4000-8000-000000000002', C = '00000000-0000-4000-8000-000000000003';
/** A meta built as RULE_EVENT_META builds one (db/rules/rule-event.sql.ts), from values of each attribute's type. */
const sampleMeta = async () => (await t.db.knex.raw(`SELECT to_jsonb(ROW('enter', true,
  ROW(?::uuid, 'r', ?::uuid, '[]'::jsonb, true, false, 'c', ROW(?::uuid, 'device')::rule_event_object,
    ROW('s', 'e', 'u')::rule_event_links)::rule_event_rule,
  ROW(?::uuid, 't', '{"rpm": 900}'::jsonb)::rule_event_message)::rule_event_meta) AS meta`, [A, B, B, C])).rows[0].meta;
const SAMPLE_META = {
  direction: 'enter', firstEval: true,
  rule: {
    id: A, name: 'r', deviceId: B, boundaries: [], evaluated: true, covered: false, createdAt: 'c',
    object: { id: B, type: 'device' }, links: { self: 's', events: 'e', subscriptions: 'u' },
  },
  message: { id: C, timestamp: 't', snapshot: { rpm: 900 } },
};

// The rule event's meta is built as one nested row of these types (db/rules/rule-event.sql.ts); test/db/rules.evaluate.test.ts
// holds a stored event's meta to the rule copy the API gives.
describe('rule event meta types (migration 027)', () => {
  it('name their attributes as the meta\'s keys, nested rows as nested objects', async () => {
    expect(await sampleMeta()).toEqual(SAMPLE_META);
  });

  it('goes down and up again', async () => {
    const all = ['rule_event_links', 'rule_event_message', 'rule_event_meta', 'rule_event_object', 'rule_event_rule'];
    expect(await types()).toEqual(all);
    await m027.down(t.db.knex);
    expect(await types()).toEqual([]);
    await m027.up(t.db.knex);
    expect(await types()).toEqual(all);
    expect(await sampleMeta()).toEqual(SAMPLE_META);
  });
});

// Rules are immutable: the copy of its boundaries a rule event carries is stored when the rule is created (migration 029).
describe('a rule\'s stored boundaries copy (migration 029)', () => {
  const stored = async (id: string) => (await t.db.knex('rules').select('boundaries').where({ id }).first())?.boundaries;

  it('is the boundaries as the rule copy presents them, in order, written at creation and again by the migrations', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const rule = await t.repos.rules.create(app.principal.id, device.id, {
      name: 'three', boundaries: [
        { type: 'radius', lon: -96.797, lat: 32.7767, radius: 50 },
        { type: 'parametric', parameter: 'rpm', min: 700, max: null },
        { type: 'polygon', coordinates: [[[0, 0], [0.001, 0], [0.001, 0.001], [0, 0]]] },
      ],
    });
    const copy = JSON.parse(JSON.stringify(rule.boundaries.map(presentBoundary)));
    expect(copy.map((b: { type: string }) => b.type)).toEqual(['radius', 'parametric', 'polygon']);
    expect(await stored(rule.id)).toEqual(copy);

    await m029.down(t.db.knex);
    expect((await t.db.knex.raw(`SELECT 1 FROM information_schema.columns WHERE table_name = 'rules' AND column_name = 'boundaries'`)).rows).toEqual([]);
    await m029.up(t.db.knex);
    await copyBoundaries(t.db.knex);
    expect(await stored(rule.id)).toEqual(copy);
  });
});
