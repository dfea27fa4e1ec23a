// Two gateways vs one (docs/operations/scale-out.md): N `--only gateway` processes sharing Redis (TEST_REDIS_URL or
// redis://127.0.0.1:6379/6) on one PostgreSQL, devices split round-robin, QoS 1 frames as fast as a window of 4
// allows. Prints one JSON line. Usage: npx tsx test/e2e/support/measure-gateways.ts <gateways> <database-url> [devices] [seconds]
import { randomUUID } from 'node:crypto';
import { openDatabase, migrateLatest, repositories } from '../../../db/index.js';
import { runLoad, quantile, round } from '../../../bench/harness.js';
import { serve } from './processes.js';

const [gateways, dbUrl, devicesN = '50', seconds = '15'] = process.argv.slice(2);
const db = await openDatabase({ databaseUrl: dbUrl });
await migrateLatest(db.knex);
const repos = repositories(db.knex);
const owner = await repos.devices.createOwner({ name: 'scale-bench' });
const devices: { id: string; secret: string }[] = [];
for (let i = 0; i < Number(devicesN); i++) {
  const { device, secret } = await repos.devices.provision({ name: `sb ${i}`, ownerId: owner.id });
  devices.push({ id: device.id, secret });
}
const base = new URL(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/6");
base.searchParams.set("prefix", `scale-bench-${randomUUID()}`);
const redis = base.toString();
const gws = [];
for (let i = 0; i < Number(gateways); i++) gws.push(await serve('gateway', ['--database-url', dbUrl, '--mqtt-redis-url', redis]));
try {
  const results = await Promise.all(gws.map((g, i) => runLoad({
    url: g.mqtt!, devices: devices.filter((_, k) => k % gws.length === i), durationMs: Number(seconds) * 1000, warmupMs: 3000, window: 4, rate: 0,
  })));
  const acked = results.reduce((n, r) => n + r.acked, 0);
  const lat = Float64Array.from(results.flatMap((r) => [...r.latencies]));
  const [{ n: stored }] = await db.knex('messages').whereIn('device_id', devices.map((d) => d.id)).count({ n: '*' });
  const ackedTotal = results.reduce((n, r) => n + r.ackedTotal, 0);
  process.stdout.write(`${JSON.stringify({ gateways: gws.length, devices: devices.length, framesPerSecond: round(acked / (results[0].measuredMs / 1000), 0),
    p50: round(quantile(lat, 0.5)), p99: round(quantile(lat, 0.99)), ackedTotal, stored: Number(stored), errors: results.reduce((n, r) => n + r.errors, 0) })}\n`);
} finally {
  await Promise.all(gws.map((g) => g.stop()));
  await db.close();
}
