// The two designs of idempotency on a time-partitioned messages table, side by side in one run (the performance page,
// "Idempotency with partitions"): (A) the frame's time in the unique key, as drivewire does: one unique index
// (device_id, ts, id), ON CONFLICT DO NOTHING; (B) a dedupe table keyed by (device_id, frame_id) beside a
// non-unique index on messages, each batch inserted into it first and only its new frames into messages. Batches of
// 1,000 frames from 200 devices, alternated A/B. Prints frames/s and bytes per message of each.
//   node bench/idempotency-designs.mjs postgres://user@host:5432/db [batches]
// It creates (and drops) the tables ma, mb and frame_keys in that database, which needs PostGIS.
import pg from 'pg';

const url = process.argv[2];
if (!url) throw new Error('usage: node bench/idempotency-designs.mjs <postgres url> [batches]');
const c = new pg.Client({ connectionString: url });
await c.connect();
const BATCH = 1000, BATCHES = Number(process.argv[3] ?? 300), DEVICES = 200;
async function setup() {
  await c.query(`DROP TABLE IF EXISTS ma, mb, frame_keys CASCADE`);
  for (const t of ['ma', 'mb']) {
    await c.query(`CREATE TABLE ${t} (id uuid NOT NULL, device_id uuid NOT NULL, ts timestamptz NOT NULL, received_at timestamptz NOT NULL,
      num float8[], location geometry(Point,4326)) PARTITION BY RANGE (ts)`);
    await c.query(`CREATE TABLE ${t}_p1 PARTITION OF ${t} FOR VALUES FROM ('2026-12-07') TO ('2026-12-08')`);
  }
  await c.query(`CREATE UNIQUE INDEX ma_k ON ma (device_id, ts DESC, id DESC)`);
  await c.query(`CREATE INDEX mb_k ON mb (device_id, ts DESC, id DESC)`);
  await c.query(`CREATE TABLE frame_keys (device_id uuid NOT NULL, frame_id text NOT NULL, ts timestamptz NOT NULL, PRIMARY KEY (device_id, frame_id))`);
}
const devices = Array.from({ length: DEVICES }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
const rowsSql = `SELECT gen_random_uuid() AS id, d AS device_id, '2026-12-07T01:00:00Z'::timestamptz + (($1::int * ${BATCH / DEVICES} + i) * interval '1 second') AS ts,
  now() AS received_at, ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23]::float8[] AS num, ST_SetSRID(ST_MakePoint(-96.8, 32.7), 4326) AS location,
  'f' || $1::int || '-' || i AS frame_id
  FROM unnest($2::uuid[]) d, generate_series(1, ${BATCH / DEVICES}) i`;
const A = `INSERT INTO ma SELECT id, device_id, ts, received_at, num, location FROM (${rowsSql}) r ON CONFLICT (device_id, ts, id) DO NOTHING`;
const B = `WITH r AS (${rowsSql}), k AS (INSERT INTO frame_keys SELECT device_id, frame_id, ts FROM r ON CONFLICT DO NOTHING RETURNING device_id, frame_id)
  INSERT INTO mb SELECT r.id, r.device_id, r.ts, r.received_at, r.num, r.location FROM r JOIN k USING (device_id, frame_id)`;
await c.query('CREATE EXTENSION IF NOT EXISTS postgis');
await setup();
const ms = { A: 0, B: 0 };
for (let b = 0; b < BATCHES; b++) {
  for (const [name, sql] of (b % 2 ? [['A', A], ['B', B]] : [['B', B], ['A', A]])) {
    const t0 = performance.now();
    await c.query('BEGIN'); await c.query(sql, [b, devices]); await c.query('COMMIT');
    ms[name] += performance.now() - t0;
  }
}
const size = async (q) => Number((await c.query(q)).rows[0].b);
const n = BATCHES * BATCH;
const a = await size(`SELECT sum(pg_total_relation_size(relid)) AS b FROM pg_partition_tree('ma')`);
const bm = await size(`SELECT sum(pg_total_relation_size(relid)) AS b FROM pg_partition_tree('mb')`);
const bk = await size(`SELECT pg_total_relation_size('frame_keys') AS b`);
console.log(JSON.stringify({ frames: n, A: { framesPerSecond: Math.round(n / ms.A * 1000), bytesPerMessage: Math.round(a / n) },
  B: { framesPerSecond: Math.round(n / ms.B * 1000), bytesPerMessage: Math.round((bm + bk) / n), dedupeTableBytesPerMessage: Math.round(bk / n) },
  ratioBtoA: Number((ms.A / ms.B).toFixed(2)) }));
await c.query(`DROP TABLE IF EXISTS ma, mb, frame_keys CASCADE`);
await c.end();
