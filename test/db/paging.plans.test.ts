import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { isTable, partitionsFor } from '../helpers/partitions.js';

// The stream order (ts desc, id desc) and the before cursor are served by the lists' indexes: a page reads about its
// own rows from the index, never sorts the device's whole history.

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

/** A read of the table: its node, the rows it returned and dropped by its filter, and whether it is the page's own. */
interface Read { node: string; rows: number; page: boolean }

/**
 * Runs `call` and answers the plan of its statement on `table` that orders (the page), executed (EXPLAIN ANALYZE):
 * its reads of `table`, and the rows each sort node sorted.
 */
async function planOf(knex: Knex, table: string, call: () => Promise<unknown>) {
  const seen: { sql: string; bindings: unknown[] }[] = [];
  const listen = (q: { sql: string; bindings?: unknown[] }) => { seen.push({ sql: q.sql, bindings: q.bindings ?? [] }); };
  knex.on('query', listen);
  try { await call(); } finally { knex.removeListener('query', listen); }
  const page = seen.find((q) => new RegExp(`from "${table}"`, 'i').test(q.sql) && /order by/i.test(q.sql));
  expect(page, `a page statement on ${table}`).toBeDefined();
  // knex reports the driver's $n placeholders; raw() takes ?
  const { rows } = await knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${page!.sql.replace(/\$\d+/g, '?')}`, page!.bindings as Knex.RawBinding[]);
  const out = rows[0]['QUERY PLAN'];
  const plan = (typeof out === 'string' ? JSON.parse(out) : out)[0].Plan;
  const reads: Read[] = [];
  const sorted: number[] = [];
  const walk = (n: any, sub: boolean) => {
    if (n['Node Type'] === 'Sort') sorted.push(n['Actual Rows']);
    if (isTable(n['Relation Name'], table)) reads.push({ node: n['Node Type'], rows: n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0), page: !sub });
    for (const c of n.Plans ?? []) walk(c, sub || c['Parent Relationship'] === 'InitPlan' || c['Parent Relationship'] === 'SubPlan');
  };
  walk(plan, false);
  return { reads, sorted, pageRead: reads.filter((r) => r.page) };
}

async function seed(table: 'messages' | 'events', deviceId: string, from: string, n: number, perMs: number) {
  const ts = `?::timestamptz + make_interval(secs => i / ${perMs})`;
  if (table === 'messages') {
    await partitionsFor(t.db.knex, 'messages', from, new Date(new Date(from).getTime() + (n / perMs) * 1000));
    await t.db.knex.raw(`INSERT INTO messages (id, device_id, ts, received_at)
      SELECT message_uuid(x.ts), ?, x.ts, now() FROM (SELECT ${ts} AS ts FROM generate_series(0, ?) i) x`, [deviceId, from, n - 1]);
  } else {
    await t.db.knex.raw(`INSERT INTO events (id, device_id, vehicle_id, application_id, ts, stored, event_type, object_type, object_id, meta)
      SELECT gen_random_uuid(), ?, NULL, NULL, ${ts}, now(), 'startup', 'vehicle', NULL, NULL FROM generate_series(0, ?) i`, [deviceId, from, n - 1]);
  }
  await t.db.knex.raw(`ANALYZE ${table}`);
}

/** The id of the `k`-th newest record of the device dated `until` (the cursor a page of `k` records would end on). */
async function cursorAt(table: string, deviceId: string, until: Date, k: number): Promise<string> {
  const rows = await t.db.knex(table).where({ device_id: deviceId, ts: until }).orderBy('id', 'desc').limit(k).select('id');
  return rows[k - 1].id;
}

describe('stream pages with the before cursor', () => {
  it("a device's messages: an index scan of about the page, no sort", { timeout: 60_000 }, async () => {
    const app = await t.make.application('enterprise');
    const device = await t.make.device(app.principal);
    await seed('messages', device.id, '2024-07-01T00:00:00Z', 20_000, 4); // four messages a second, so the seconds split
    const until = new Date('2024-07-01T01:00:00Z');
    const before = await cursorAt('messages', device.id, until, 2);
    for (const [b, since] of [[undefined, undefined], [before, undefined], [before, new Date('2024-06-01T00:00:00Z')]] as const) {
      const { reads, sorted, pageRead } = await planOf(t.db.knex, 'messages',
        () => t.repos.telemetry.listMessages(device.id, { until, before: b, since, limit: 20 }));
      expect(sorted.filter((n) => n > 0), 'rows sorted').toEqual([]);
      expect(reads.filter((r) => !/Index/.test(r.node)), 'reads not from an index').toEqual([]);
      // the page: limit + 1, and the records of until's millisecond at or after the cursor the filter drops
      expect(pageRead).toHaveLength(1);
      expect(pageRead[0].rows).toBeLessThanOrEqual(25);
    }
  });

  it("a device's events: the index on (device_id, ts), sorted only within a millisecond", { timeout: 60_000 }, async () => {
    const app = await t.make.application('enterprise');
    const device = await t.make.device(app.principal);
    await seed('events', device.id, '2024-07-01T00:00:00Z', 20_000, 4);
    const until = new Date('2024-07-01T01:00:00Z');
    const before = await cursorAt('events', device.id, until, 2);
    const { reads, sorted, pageRead } = await planOf(t.db.knex, 'events',
      () => t.repos.eventsQuery.listForDevice(app.principal, device.id, {}, { until, before, limit: 20 }));
    expect(sorted, 'rows sorted by a full sort').toEqual([]);
    expect(reads.filter((r) => !/Index/.test(r.node)), 'reads not from an index').toEqual([]);
    expect(pageRead).toHaveLength(1);
    expect(pageRead[0].rows).toBeLessThanOrEqual(30);
  });
});
