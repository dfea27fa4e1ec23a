// Bare baselines measured in the same run as a scenario, so every figure is a ratio to what the
// machine can do with nothing of ours in the way (issue 13): a bare Aedes broker that acknowledges
// QoS 1 frames as soon as it has them, and a raw COPY of the same rows into a table shaped like
// `messages`. The load generator and its options are the scenario's own.
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { Aedes } from 'aedes';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { quantile, round, runLoad, type LoadOptions } from './harness.js';

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

/** A messages-like row as the load generator's frames become (~300 bytes of JSON data, a point). */
function row(deviceId: string, i: number, t0: number): string {
  const data = JSON.stringify({
    rpm: 1726, vehicleSpeed: i % 120, calculatedLoadValue: 35.3, massAirFlow: 5, engineCoolantTemp: 61,
    location: { type: 'Point', coordinates: [-96.797, 32.7767 + (i % 1000) * 1e-5] },
    accel: { maxX: 0.12, maxY: 0.31, maxZ: 9.9, minX: -0.1, minY: -0.2, minZ: 9.6 },
  });
  const ts = new Date(t0 + i).toISOString();
  const point = `SRID=4326;POINT(-96.797 ${32.7767 + (i % 1000) * 1e-5})`;
  // COPY text format: tab-separated, backslashes doubled.
  return [randomUUID(), deviceId, ts, `f${i}`, 'telemetry', data.replace(/\\/g, '\\\\'), point, ts].join('\t') + '\n';
}

/**
 * Rows per second a raw COPY (pg-copy-streams, batches of `batchRows`) writes into an unlogged-free
 * copy of the messages table with the same indexes, on PostgreSQL. PGlite has no COPY stream: null.
 */
export async function rawCopy(databaseUrl: string | null, rows: number, batchRows = 500): Promise<{ rowsPerSecond: number } | null> {
  if (!databaseUrl) return null;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const table = `bench_copy_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  try {
    await client.query(`CREATE TABLE ${table} (LIKE messages INCLUDING DEFAULTS INCLUDING INDEXES)`);
    const devices = Array.from({ length: 50 }, () => randomUUID());
    const t0 = Date.now();
    const started = performance.now();
    for (let done = 0; done < rows; done += batchRows) {
      const n = Math.min(batchRows, rows - done);
      const lines = Array.from({ length: n }, (_, k) => row(devices[(done + k) % devices.length], done + k, t0));
      await client.query('BEGIN');
      await pipeline(Readable.from(lines), client.query(copyFrom(
        `COPY ${table} (id, device_id, ts, frame_id, kind, data, location, received_at) FROM STDIN`)));
      await client.query('COMMIT');
    }
    return { rowsPerSecond: round(rows / ((performance.now() - started) / 1000), 0) };
  } finally {
    await client.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    await client.end();
  }
}
