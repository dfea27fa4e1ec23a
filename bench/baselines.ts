// Bare baselines measured in the same run as a scenario, so every figure is a ratio to what the
// machine can do with nothing of ours in the way: a bare Aedes broker that acknowledges
// QoS 1 frames as soon as it has them, a raw COPY of the same rows into a table shaped like
// `messages`, and the two together (the storing floor: a bare Aedes that acknowledges a frame once
// its payload is COPYed). The load generator and its options are the scenario's own.
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { Aedes } from 'aedes';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { pgliteOf } from '../db/connection.js';
import { quantile, round, runLoad, type LoadOptions } from './harness.js';
import type { ProcessFigures, ProcessMonitor } from './processes.js';

export interface BareAedesFigures {
  framesPerSecond: number;
  publishToAckMs: { p50: number; p99: number };
}

/** A bare Aedes on loopback, port 0: no authentication, no decoding, no storage; counts the PUBLISHes it handles. */
export async function startBareAedes(): Promise<{ url: string; published(): number; close(): Promise<void> }> {
  const broker = await Aedes.createBroker();
  let published = 0;
  broker.on('publish', (_packet, client) => { if (client) published++; });
  const server = net.createServer(broker.handle as (socket: net.Socket) => void);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `mqtt://127.0.0.1:${port}`,
    published: () => published,
    async close() {
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The same load against a bare Aedes (no authentication, no decoding, no storage). */
export async function bareAedes(load: Omit<LoadOptions, 'url'>): Promise<BareAedesFigures> {
  const bare = await startBareAedes();
  try {
    const r = await runLoad({ ...load, url: bare.url });
    return {
      framesPerSecond: round(r.acked / (r.measuredMs / 1000), 0),
      publishToAckMs: { p50: round(quantile(r.latencies, 0.5)), p99: round(quantile(r.latencies, 0.99)) },
    };
  } finally {
    await bare.close();
  }
}

/** A row of COPY's text format for COPY_COLUMNS: tab-separated, the JSON payload's backslashes doubled, `\N` a null location. */
export function copyLine(id: string, deviceId: string, ts: string, payload: string, location: string | null): string {
  return `${id}\t${deviceId}\t${ts}\t${payload.replace(/\\/g, '\\\\')}\t${location ?? '\\N'}\t${ts}\n`;
}

/** The payload goes whole into a jsonb column of its own, the columns the messages' index needs beside it. */
const COPY_COLUMNS = '(id, device_id, ts, payload, location, received_at)';

/** A messages-like row as the load generator's frames become (~300 bytes of JSON data, a point). */
function row(deviceId: string, i: number, t0: number): string {
  const data = JSON.stringify({
    rpm: 1726, vehicleSpeed: i % 120, calculatedLoadValue: 35.3, massAirFlow: 5, engineCoolantTemp: 61,
    location: { type: 'Point', coordinates: [-96.797, 32.7767 + (i % 1000) * 1e-5] },
    accel: { maxX: 0.12, maxY: 0.31, maxZ: 9.9, minX: -0.1, minY: -0.2, minZ: 9.6 },
  });
  return copyLine(randomUUID(), deviceId, new Date(t0 + i).toISOString(), data, `SRID=4326;POINT(-96.797 ${32.7767 + (i % 1000) * 1e-5})`);
}

/** Where a raw baseline writes: the platform's database (its knex), over connections of its own on PostgreSQL. */
export type CopyTarget = { databaseUrl: string | null; knex: Knex };

/**
 * A table shaped like `messages` (same columns, defaults and indexes, plus the payload as jsonb) that the raw baselines COPY into, in the
 * platform's own database, made, counted and dropped through its knex. The COPYs go over `lanes` connections of their
 * own on PostgreSQL (pg-copy-streams), through the embedded database itself on PGlite (one connection; COPY from a
 * blob, PGlite having no COPY stream).
 */
export interface CopyTable {
  table: string;
  lanes: number;
  /** COPY of rows in COPY's text format on `lane`, committed (COPY in autocommit is its own transaction). */
  copy(lane: number, text: string): Promise<void>;
  /** Rows in the table. */
  rows(): Promise<number>;
  close(): Promise<void>;
}

export async function copyTable(db: CopyTarget, lanes: number): Promise<CopyTable> {
  const table = `bench_copy_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const pglite = pgliteOf(db.knex);
  if (!db.databaseUrl && !pglite) throw new Error('a raw COPY baseline needs the PostgreSQL URL or the embedded PGlite');
  await db.knex.raw(`CREATE TABLE ${table} (LIKE messages INCLUDING DEFAULTS INCLUDING INDEXES)`);
  await db.knex.raw(`ALTER TABLE ${table} ADD COLUMN payload jsonb`);
  const clients = db.databaseUrl ? Array.from({ length: lanes }, () => new pg.Client({ connectionString: db.databaseUrl! })) : [];
  await Promise.all(clients.map((c) => c.connect()));
  const copyStdin = `COPY ${table} ${COPY_COLUMNS} FROM STDIN`;
  const copyBlob = `COPY ${table} ${COPY_COLUMNS} FROM '/dev/blob'`;
  return {
    table,
    lanes: clients.length || 1,
    copy: async (lane, text) => {
      if (clients.length) await pipeline(Readable.from([text]), clients[lane].query(copyFrom(copyStdin)));
      else await pglite!.query(copyBlob, [], { blob: new Blob([text]) });
    },
    rows: async () => Number((await db.knex(table).count({ n: '*' }))[0].n),
    async close() {
      await Promise.all(clients.map((c) => c.end()));
      await db.knex.raw(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    },
  };
}

/**
 * Rows per second a raw COPY (batches of `batchRows`, each a COPY in autocommit: no BEGIN and COMMIT round trips)
 * writes into a copy of the messages table with the same indexes, and the rows the table then holds: on PostgreSQL with
 * pg-copy-streams, on PGlite from a blob.
 */
export async function rawCopy(db: CopyTarget, rows: number, batchRows = 500): Promise<{ rowsPerSecond: number; rows: number }> {
  const sink = await copyTable(db, 1);
  try {
    const devices = Array.from({ length: 50 }, () => randomUUID());
    const t0 = Date.now();
    const started = performance.now();
    for (let done = 0; done < rows; done += batchRows) {
      const n = Math.min(batchRows, rows - done);
      let text = '';
      for (let k = 0; k < n; k++) text += row(devices[(done + k) % devices.length], done + k, t0);
      await sink.copy(0, text);
    }
    const rowsPerSecond = round(rows / ((performance.now() - started) / 1000), 0);
    return { rowsPerSecond, rows: await sink.rows() };
  } finally {
    await sink.close();
  }
}

export interface StoringAedesFigures extends BareAedesFigures {
  /** Its frames/s over bare Aedes's, same run: the most any broker that stores each frame before its PUBACK can reach here. */
  ratioToBareAedes: number;
  meanBatchRows: number;
  /** CPU and RSS over its measured window, as the scenario's own `processes` (the bench process holds the idle platform too). */
  processes?: ProcessFigures;
}

/**
 * The floor of a storing gateway: a bare Aedes on loopback, port 0 (no authentication, no decoding) that
 * acknowledges a QoS 1 PUBLISH only once its payload is stored, as it came, in a row of a copy of `messages` (`table`):
 * COPY in batches of at most `batchRows`, over the platform's lanes (2 connections on PostgreSQL, PGlite's one). A
 * QoS 0 PUBLISH is not stored. For the bench's load only: the payload must be JSON without raw control characters and
 * the client id a UUID, as the load generator's are (a batch that COPY refuses fails every PUBLISH in it).
 */
export async function startStoringAedes(db: CopyTarget, batchRows = 500) {
  const sink = await copyTable(db, db.databaseUrl ? 2 : 1);
  const queue: { line: string; done: (err?: Error | null) => void }[] = [];
  /** Each lane's drain while it runs. */
  const draining: (Promise<void> | null)[] = new Array(sink.lanes).fill(null);
  let batches = 0, rows = 0, committed = 0;
  const drain = async (lane: number) => {
    while (queue.length) {
      // what arrives meanwhile joins the batch: on PGlite a COPY holds the thread, so the sockets are read only
      // between batches (without this turn of the event loop, PGlite's batches held ~5 rows)
      await new Promise((resolve) => setImmediate(resolve));
      const batch = queue.splice(0, batchRows);
      let text = '';
      for (const q of batch) text += q.line;
      let failed: Error | null = null;
      try { await sink.copy(lane, text); } catch (err) { failed = err as Error; }
      batches++; rows += batch.length;
      if (!failed) committed += batch.length;
      for (const q of batch) q.done(failed);
    }
  };
  const broker = await Aedes.createBroker({
    authorizePublish(client, packet, done) {
      if (!client || packet.qos === 0) return done(null);
      const now = new Date().toISOString();
      queue.push({ line: copyLine(randomUUID(), client.id, now, packet.payload.toString(), null), done });
      const lane = draining.indexOf(null);
      if (lane >= 0) draining[lane] = drain(lane).finally(() => { draining[lane] = null; });
    },
  });
  const server = net.createServer(broker.handle as (socket: net.Socket) => void);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    table: sink.table,
    meanBatchRows: () => (batches ? round(rows / batches, 0) : 0),
    /** Frames whose row is committed (and acknowledged, QoS 1): what the knee counts as stored. */
    stored: () => committed,
    async close() {
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(draining);
      await sink.close();
    },
  };
}

/**
 * The same load against startStoringAedes: nothing of the platform's own work is in it (no decoding, no location, no
 * trips, distance or rules), so no platform that stores every frame before acknowledging it can be faster on this
 * machine; a target above its ratio to bare Aedes is one this machine cannot meet.
 */
export async function storingAedes(load: Omit<LoadOptions, 'url'>, db: CopyTarget, bare: BareAedesFigures,
  monitor?: ProcessMonitor): Promise<StoringAedesFigures> {
  const storing = await startStoringAedes(db);
  try {
    const r = await runLoad({ ...load, url: storing.url }, monitor);
    const framesPerSecond = round(r.acked / (r.measuredMs / 1000), 0);
    return {
      framesPerSecond,
      publishToAckMs: { p50: round(quantile(r.latencies, 0.5)), p99: round(quantile(r.latencies, 0.99)) },
      ratioToBareAedes: round(framesPerSecond / bare.framesPerSecond, 2),
      meanBatchRows: storing.meanBatchRows(),
      ...(r.processes ? { processes: r.processes } : {}),
    };
  } finally {
    await storing.close();
  }
}
