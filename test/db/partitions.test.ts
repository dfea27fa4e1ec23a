import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createTestDb } from '../helpers/db.js';
import { openDatabase, type Db } from '../../db/connection.js';
import { recordStatements } from '../helpers/statements.js';
import {
  createAhead, createPartitions, dropPartitionsBefore, ensurePartitions, forgetPartitions, listPartitions, nextSpan,
  partitionName, spanStart, MAX_PARTITIONS_PER_CALL, type PartitionedTable,
} from '../../db/partitions.js';
import { convertToPartitioned, withColumnAdded } from '../../db/partitioned-table.js';

let db: Db & { url: string | null };
beforeAll(async () => { db = await createTestDb(); });
afterAll(async () => { await db?.close(); });

const DAY = 86_400_000;
const at = (iso: string) => new Date(iso);

/** A fresh log table partitioned by day on `ts`, with a name of its own. */
async function logTable(span: PartitionedTable['span'] = 'day'): Promise<PartitionedTable> {
  const table = `pt_${randomBytes(4).toString('hex')}`;
  await db.knex.raw(`CREATE TABLE ${table} (id bigserial, ts timestamptz NOT NULL, body text NOT NULL DEFAULT 'x',
    PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts)`);
  return { table, column: 'ts', span };
}

describe('spans', () => {
  it('starts a day at UTC midnight and a month on its first day', () => {
    expect(spanStart('day', at('2026-03-01T23:59:59.999Z'))).toEqual(at('2026-03-01T00:00:00Z'));
    expect(spanStart('month', at('2026-03-31T23:00:00-05:00'))).toEqual(at('2026-04-01T00:00:00Z'));
    expect(nextSpan('day', at('2026-02-28T00:00:00Z'))).toEqual(at('2026-03-01T00:00:00Z'));
    expect(nextSpan('month', at('2026-12-01T00:00:00Z'))).toEqual(at('2027-01-01T00:00:00Z'));
  });

  it('names a partition by its table and its start', () => {
    expect(partitionName({ table: 'transactions', column: 'ts', span: 'day' }, at('2026-12-07T00:00:00Z'))).toBe('transactions_p20261207');
    expect(partitionName({ table: 'dead_letters', column: 'received_at', span: 'month' }, at('2026-12-01T00:00:00Z'))).toBe('dead_letters_p202612');
  });

  it('refuses names that are not plain identifiers', async () => {
    await expect(listPartitions(db.knex, { table: 'x; DROP TABLE devices', column: 'ts', span: 'day' })).rejects.toThrow(/identifier/);
  });
});

describe('creating partitions', () => {
  it('makes one partition per day covering the range, with its bounds and size, and none twice', async () => {
    const spec = await logTable();
    const made = await createPartitions(db.knex, spec, at('2026-01-30T12:00:00Z'), at('2026-02-01T01:00:00Z'));
    expect(made).toEqual(['20260130', '20260131', '20260201'].map((d) => `${spec.table}_p${d}`));
    const parts = await listPartitions(db.knex, spec);
    expect(parts.map((p) => [p.from.toISOString(), p.to.toISOString()])).toEqual([
      ['2026-01-30T00:00:00.000Z', '2026-01-31T00:00:00.000Z'],
      ['2026-01-31T00:00:00.000Z', '2026-02-01T00:00:00.000Z'],
      ['2026-02-01T00:00:00.000Z', '2026-02-02T00:00:00.000Z'],
    ]);
    for (const p of parts) { expect(p.bytes).toBeGreaterThan(0); expect(p.detachPending).toBe(false); }
    expect(await createPartitions(db.knex, spec, at('2026-01-30T00:00:00Z'), at('2026-02-01T00:00:00Z'))).toEqual([]);
  });

  it('makes month partitions where the span is a month', async () => {
    const spec = await logTable('month');
    await createPartitions(db.knex, spec, at('2026-11-15T00:00:00Z'), at('2027-01-02T00:00:00Z'));
    expect((await listPartitions(db.knex, spec)).map((p) => p.name)).toEqual(['202611', '202612', '202701'].map((m) => `${spec.table}_p${m}`));
  });

  it('keeps the parent\'s defaults, checks and statistics targets on each partition', async () => {
    const spec = await logTable();
    await db.knex.raw(`ALTER TABLE ${spec.table} ADD CONSTRAINT body_short CHECK (length(body) < 10), ALTER COLUMN body SET STATISTICS 7`);
    const [name] = await createPartitions(db.knex, spec, at('2026-05-01T00:00:00Z'), at('2026-05-01T00:00:00Z'));
    const { rows } = await db.knex.raw(`SELECT attstattarget AS n FROM pg_attribute WHERE attrelid = ?::regclass AND attname = 'body'`, [name]);
    expect(rows[0].n).toBe(7);
    await db.knex(spec.table).insert({ ts: at('2026-05-01T10:00:00Z') });
    expect(await db.knex(spec.table).pluck('body')).toEqual(['x']);
    await expect(db.knex(spec.table).insert({ ts: at('2026-05-01T11:00:00Z'), body: 'far too long a body' })).rejects.toThrow(/body_short/);
  });

  it('gives each partition the table\'s storage parameters', async () => {
    const spec = { ...(await logTable()), storage: 'fillfactor = 50' };
    const [name] = await createPartitions(db.knex, spec, at('2026-05-01T00:00:00Z'), at('2026-05-01T00:00:00Z'));
    const { rows } = await db.knex.raw('SELECT reloptions FROM pg_class WHERE oid = ?::regclass', [name]);
    expect(rows[0].reloptions).toEqual(['fillfactor=50']);
  });

  it('refuses a row of a time without its partition (there is no default partition)', async () => {
    const spec = await logTable();
    await createPartitions(db.knex, spec, at('2026-05-01T00:00:00Z'), at('2026-05-01T00:00:00Z'));
    await expect(db.knex(spec.table).insert({ ts: at('2026-05-02T00:00:00Z') })).rejects.toThrow(/no partition/);
  });

  it('makes the same partitions once while two callers make them at the same time', async () => {
    const spec = await logTable();
    const other = db.url ? await openDatabase({ databaseUrl: db.url }) : db;
    try {
      const range = [at('2026-06-01T00:00:00Z'), at('2026-06-04T00:00:00Z')] as const;
      const [a, b] = await Promise.all([createPartitions(db.knex, spec, ...range), createPartitions(other.knex, spec, ...range)]);
      expect([...a, ...b].sort()).toEqual(['01', '02', '03', '04'].map((d) => `${spec.table}_p202606${d}`));
      expect(await listPartitions(db.knex, spec)).toHaveLength(4);
    } finally {
      if (other !== db) await other.close();
    }
  });

  it('makes the partitions from today to the days ahead', async () => {
    const spec = await logTable();
    const made = await createAhead(db.knex, spec, 2, at('2026-12-07T18:00:00Z'));
    expect(made).toEqual(['20261207', '20261208', '20261209'].map((d) => `${spec.table}_p${d}`));
  });

  it('refuses to make more partitions at once than a range of years needs', async () => {
    const spec = await logTable();
    await expect(createPartitions(db.knex, spec, at('2000-01-01T00:00:00Z'), new Date(at('2000-01-01T00:00:00Z').getTime() + MAX_PARTITIONS_PER_CALL * DAY)))
      .rejects.toThrow(RangeError);
    expect(await listPartitions(db.knex, spec)).toEqual([]);
  });
});

describe('ensuring partitions for the rows about to be stored', () => {
  it('makes the missing ones, late days included, then answers from what it knows without a query', async () => {
    const spec = await logTable();
    const times = [at('2026-07-10T08:00:00Z'), at('2026-07-10T09:00:00Z'), at('2026-07-03T23:59:00Z')];
    await ensurePartitions(db.knex, spec, times);
    await db.knex(spec.table).insert(times.map((ts) => ({ ts })));
    expect((await listPartitions(db.knex, spec)).map((p) => p.name)).toEqual([`${spec.table}_p20260703`, `${spec.table}_p20260710`]);
    const { sql } = await recordStatements(db.knex, () => ensurePartitions(db.knex, spec, [times[1].getTime(), at('2026-07-10T23:00:00Z')]));
    expect(sql).toEqual([]);
  });

  it('reads the catalog again once told what it knows is stale, and makes a partition dropped elsewhere', async () => {
    const spec = await logTable();
    await ensurePartitions(db.knex, spec, [at('2026-08-01T00:00:00Z')]);
    await db.knex.raw(`DROP TABLE ${partitionName(spec, at('2026-08-01T00:00:00Z'))}`);
    forgetPartitions(db.knex, spec.table);
    await ensurePartitions(db.knex, spec, [at('2026-08-01T10:00:00Z')]);
    await db.knex(spec.table).insert({ ts: at('2026-08-01T10:00:00Z') });
    expect(await db.knex(spec.table).count({ n: '*' }).first()).toEqual({ n: 1 });
  });

  it('refuses a time that is not one', async () => {
    const spec = await logTable();
    await expect(ensurePartitions(db.knex, spec, [new Date('nope')])).rejects.toThrow(RangeError);
  });

  it('knows a partition made in a transaction only once the transaction commits', async () => {
    const spec = await logTable();
    await db.knex.transaction(async (trx) => {
      await ensurePartitions(trx, spec, [at('2026-09-01T00:00:00Z')]);
      throw new Error('rolled back');
    }).catch(() => undefined);
    await ensurePartitions(db.knex, spec, [at('2026-09-01T05:00:00Z')]);
    await db.knex(spec.table).insert({ ts: at('2026-09-01T05:00:00Z') });
    expect(await listPartitions(db.knex, spec)).toHaveLength(1);
  });
});

describe('dropping partitions older than a cutoff', () => {
  async function threeDays() {
    const spec = await logTable();
    const days = ['2026-10-01', '2026-10-02', '2026-10-03'];
    const rows = days.flatMap((d, i) => Array.from({ length: i + 1 }, (_, k) => ({ ts: at(`${d}T0${k}:00:00Z`) })));
    await ensurePartitions(db.knex, spec, rows.map((r) => r.ts));
    await db.knex(spec.table).insert(rows);
    return spec;
  }

  it('drops only the partitions whose whole range is before the cutoff, oldest first, and says what they held', async () => {
    const spec = await threeDays();
    const dropped = await dropPartitionsBefore(db.knex, spec, at('2026-10-03T00:00:00Z'));
    expect(dropped.map(({ name, from, to, rows, table }) => ({ name, from: from.toISOString(), to: to.toISOString(), rows, table }))).toEqual([
      { table: spec.table, name: `${spec.table}_p20261001`, from: '2026-10-01T00:00:00.000Z', to: '2026-10-02T00:00:00.000Z', rows: 1 },
      { table: spec.table, name: `${spec.table}_p20261002`, from: '2026-10-02T00:00:00.000Z', to: '2026-10-03T00:00:00.000Z', rows: 2 },
    ]);
    for (const d of dropped) expect(d.bytes).toBeGreaterThan(0);
    expect((await listPartitions(db.knex, spec)).map((p) => p.name)).toEqual([`${spec.table}_p20261003`]);
    expect(await db.knex(spec.table).count({ n: '*' }).first()).toEqual({ n: 3 });
    const { rows } = await db.knex.raw('SELECT to_regclass(?) AS t', [`${spec.table}_p20261001`]);
    expect(rows[0].t).toBeNull();
  });

  it('keeps a partition the cutoff falls inside', async () => {
    const spec = await threeDays();
    expect((await dropPartitionsBefore(db.knex, spec, at('2026-10-01T23:59:59Z')))).toEqual([]);
    expect(await db.knex(spec.table).count({ n: '*' }).first()).toEqual({ n: 6 });
  });

  it('drops nothing on a dry run, and reports the same', async () => {
    const spec = await threeDays();
    const planned = await dropPartitionsBefore(db.knex, spec, at('2026-10-02T00:00:00Z'), { dryRun: true });
    expect(planned.map((d) => [d.name, d.rows])).toEqual([[`${spec.table}_p20261001`, 1]]);
    expect(await listPartitions(db.knex, spec)).toHaveLength(3);
    expect((await dropPartitionsBefore(db.knex, spec, at('2026-10-02T00:00:00Z'))).map((d) => d.name)).toEqual([`${spec.table}_p20261001`]);
  });

  it('makes a dropped day again for a late row of it', async () => {
    const spec = await threeDays();
    await dropPartitionsBefore(db.knex, spec, at('2026-10-02T00:00:00Z'));
    await ensurePartitions(db.knex, spec, [at('2026-10-01T12:00:00Z')]);
    await db.knex(spec.table).insert({ ts: at('2026-10-01T12:00:00Z') });
    expect(await listPartitions(db.knex, spec)).toHaveLength(3);
  });

  it.runIf(process.env.TEST_DATABASE_URL)('finishes a detach that was left pending', async () => {
    const spec = await threeDays();
    const name = `${spec.table}_p20261001`;
    // a detach whose second step did not run, as when its process died: cancelled while it waits for a reader
    const reader = await openDatabase({ databaseUrl: db.url });
    const detacher = new pg.Client({ connectionString: db.url! });
    await detacher.connect();
    try {
      await reader.knex.transaction(async (trx) => {
        await trx.raw(`SELECT count(*) FROM ${spec.table}`);
        await detacher.query(`SET statement_timeout = '300ms'`);
        await expect(detacher.query(`ALTER TABLE ${spec.table} DETACH PARTITION ${name} CONCURRENTLY`)).rejects.toThrow(/timeout/);
      });
      expect((await listPartitions(db.knex, spec)).find((p) => p.name === name)?.detachPending).toBe(true);
      const dropped = await dropPartitionsBefore(db.knex, spec, at('2026-10-02T00:00:00Z'));
      expect(dropped.map((d) => d.name)).toEqual([name]);
      expect((await listPartitions(db.knex, spec)).map((p) => p.name)).toEqual([`${spec.table}_p20261002`, `${spec.table}_p20261003`]);
    } finally {
      await reader.close(); await detacher.end();
    }
  });
});

describe.runIf(process.env.TEST_DATABASE_URL)('partition DDL beside other lockers (PostgreSQL)', () => {
  it('gives way to a lock it waits for, so statements queued behind it are not held up', async () => {
    // ATTACH of a table with a foreign key locks the referenced table against writes; an open transaction that
    // wrote to that table holds the ATTACH off. A write arriving meanwhile would queue behind a waiting ATTACH.
    const ref = `ptr_${randomBytes(4).toString('hex')}`;
    await db.knex.raw(`CREATE TABLE ${ref} (id int PRIMARY KEY)`);
    await db.knex.raw(`INSERT INTO ${ref} VALUES (1)`);
    const spec = await logTable();
    await db.knex.raw(`ALTER TABLE ${spec.table} ADD COLUMN ref int REFERENCES ${ref} (id)`);
    const holder = await openDatabase({ databaseUrl: db.url });
    const writer = await openDatabase({ databaseUrl: db.url });
    try {
      const trx = await holder.knex.transaction();
      await trx.raw(`INSERT INTO ${ref} VALUES (2)`);
      const creating = createPartitions(db.knex, spec, at('2026-11-01T00:00:00Z'), at('2026-11-01T00:00:00Z'));
      await new Promise((r) => setTimeout(r, 200));
      await writer.knex.raw(`INSERT INTO ${ref} VALUES (3)`); // would wait for the holder's commit behind a waiting ATTACH
      await trx.commit();
      expect(await creating).toEqual([`${spec.table}_p20261101`]);
    } finally {
      await holder.close(); await writer.close();
    }
  });
});

describe('converting a plain table into a partitioned one', () => {
  async function plainTable() {
    const table = `pc_${randomBytes(4).toString('hex')}`;
    await db.knex.raw(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, ts timestamptz NOT NULL, kind text NOT NULL DEFAULT 'a'
      CHECK (kind IN ('a', 'b')), note text)`);
    await db.knex.raw(`CREATE INDEX ${table}_kind_ts ON ${table} (kind, ts DESC) WHERE note IS NULL`);
    await db.knex.raw(`CREATE UNIQUE INDEX ${table}_note ON ${table} (note)`);
    await db.knex.raw(`ALTER TABLE ${table} ALTER COLUMN note SET STATISTICS 5`);
    await db.knex.raw(`CREATE TABLE ${table}_count (n int NOT NULL)`);
    await db.knex.raw(`INSERT INTO ${table}_count VALUES (0)`);
    await db.knex.raw(`CREATE FUNCTION ${table}_counted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN UPDATE ${table}_count SET n = n + (SELECT count(*) FROM added); RETURN NULL; END $$`);
    await db.knex.raw(`CREATE TRIGGER ${table}_counted AFTER INSERT ON ${table} REFERENCING NEW TABLE AS added
      FOR EACH STATEMENT EXECUTE FUNCTION ${table}_counted()`);
    for (const row of [{ ts: at('2025-12-30T10:00:00Z'), note: 'one' }, { ts: at('2026-01-02T10:00:00Z'), kind: 'b' }, { ts: at('2026-01-02T11:00:00Z') }]) {
      await db.knex(table).insert(row);
    }
    return { table, column: 'ts', span: 'day' as const };
  }

  it('keeps every row, key, index, check, default, trigger, statistics target and sequence', async () => {
    const spec = await plainTable();
    const before = await db.knex(spec.table).orderBy('id').select('*');
    const moved = await db.knex.transaction((trx) => convertToPartitioned(trx, spec, { widenUniqueKeys: true, now: at('2026-01-10T00:00:00Z') }));
    expect(moved).toBe(3);
    expect(await db.knex(spec.table).orderBy('id').select('*')).toEqual(before);
    const { rows: kind } = await db.knex.raw('SELECT relkind FROM pg_class WHERE oid = ?::regclass', [spec.table]);
    expect(kind[0].relkind).toBe('p');
    // the rows' days and today to two days ahead
    expect((await listPartitions(db.knex, spec)).map((p) => p.name.slice(-8)))
      .toEqual(['20251230', '20251231', '20260101', '20260102', '20260110', '20260111', '20260112']);
    const { rows: keys } = await db.knex.raw(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE conrelid = ?::regclass AND contype = 'p'`, [spec.table]);
    expect(keys[0].def).toBe('PRIMARY KEY (id, ts)');
    const { rows: indexes } = await db.knex.raw('SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ? ORDER BY 1', [spec.table]);
    expect(indexes.map((i: { indexdef: string }) => i.indexdef.replace(/ON (ONLY )?\S+ /, 'ON t '))).toEqual([
      `CREATE INDEX ${spec.table}_kind_ts ON t USING btree (kind, ts DESC) WHERE (note IS NULL)`,
      `CREATE UNIQUE INDEX ${spec.table}_note ON t USING btree (note, ts)`,
      `CREATE UNIQUE INDEX ${spec.table}_pkey ON t USING btree (id, ts)`,
    ]);
    await expect(db.knex(spec.table).insert({ ts: at('2026-01-10T01:00:00Z'), kind: 'c' })).rejects.toThrow(/check/);
    const [{ id }] = await db.knex(spec.table).insert({ ts: at('2026-01-10T01:00:00Z') }).returning('id');
    expect(Number(id)).toBe(Number(before[2].id) + 2); // the sequence goes on: the refused row took one number
    expect((await db.knex(`${spec.table}_count`).first()).n).toBe(4); // three inserts before, one after: the move fired it for none
    const { rows: target } = await db.knex.raw(`SELECT attstattarget AS n FROM pg_attribute
      WHERE attrelid = ?::regclass AND attname = 'note'`, [`${spec.table}_p20260110`]);
    expect(target[0].n).toBe(5);
    const { rows: gone } = await db.knex.raw('SELECT to_regclass(?) AS t', [`${spec.table}_unpartitioned`]);
    expect(gone[0].t).toBeNull();
  });

  it('refuses a unique key without the partition key unless told to widen it, and leaves the table as it was', async () => {
    const spec = await plainTable();
    await expect(db.knex.transaction((trx) => convertToPartitioned(trx, spec))).rejects.toThrow(/partition key ts/);
    const { rows } = await db.knex.raw('SELECT relkind FROM pg_class WHERE oid = ?::regclass', [spec.table]);
    expect(rows[0].relkind).toBe('r');
  });

  it('refuses a table other tables reference', async () => {
    const spec = await plainTable();
    await db.knex.raw(`CREATE TABLE ${spec.table}_child (parent bigint REFERENCES ${spec.table} (id))`);
    await expect(db.knex.transaction((trx) => convertToPartitioned(trx, spec, { widenUniqueKeys: true }))).rejects.toThrow(/referenced by/);
  });

  it('adds a column at the end of a definition\'s key list, past quoted names and expressions', () => {
    expect(withColumnAdded('UNIQUE NULLS NOT DISTINCT (a, "b)")', 'ts')).toBe('UNIQUE NULLS NOT DISTINCT (a, "b)", "ts")');
    const def = 'CREATE UNIQUE INDEX i ON public.t USING btree (lower(a), b) INCLUDE (c) WHERE (d IS NULL)';
    expect(withColumnAdded(def, 'ts', def.indexOf(' USING '))).toBe(
      'CREATE UNIQUE INDEX i ON public.t USING btree (lower(a), b, "ts") INCLUDE (c) WHERE (d IS NULL)');
  });
});
