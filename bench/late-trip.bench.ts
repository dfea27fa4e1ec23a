// Late-trip scenario: one device has driven one long completed trip (--trip-messages, stored in bulk and segmented as
// in-order batches); then, over MQTT with QoS 1, it sends frames one at a time, alternating a current frame (the
// baseline, same run) and a late frame into the middle of that trip. Reports the publish→PUBACK time of each kind
// (PUBACK is sent after the batch commits, trips stage included) and the time /health takes to answer meanwhile.
import { performance } from 'node:perf_hooks';
import type { MqttClient } from 'mqtt';
import { tripsStage } from '../gateway/stages/trips.stage.js';
import { connect } from './load.common.js';
import { machine, round, startBenchPlatform } from './harness.js';
import { benchScenario, type BenchOptions } from './types.js';
import { createPartitions } from '../db/partitions.js';
import { MESSAGE_PARTITIONS } from '../db/retention/time-tables.js';

/** The trip's messages are stored a second apart; this many at a time are segmented, in order, as ingest would. */
const SEGMENT_CHUNK = 5_000;

const frameOf = (ts: number, seq: number, speed: number, lat: number) => JSON.stringify({
  id: `late-trip-${seq}`, ts, location: { lat, lon: -96.797, speed, heading: 0 },
  pids: { '0D': Math.round(speed).toString(16).padStart(2, '0'), '0C': '1F40' },
});

function publish(client: MqttClient, topic: string, body: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => client.publish(topic, body, { qos: 1 }, (err) => (err ? reject(err) : resolve(performance.now() - started))));
}

/** Polls /health every 50 ms while `during` runs; the slowest answer (ms). */
async function slowestHealth(url: string, during: Promise<unknown>): Promise<number> {
  let done = false;
  let slowest = 0;
  void during.finally(() => { done = true; });
  while (!done) {
    const started = performance.now();
    await fetch(`${url}/health`).then((r) => r.arrayBuffer(), () => null);
    slowest = Math.max(slowest, performance.now() - started);
    await new Promise((r) => setTimeout(r, 50));
  }
  return slowest;
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : null; };

async function run(o: BenchOptions) {
  const n = o.tripMessages ?? 231_500;
  const rounds = Math.max(1, Math.min(o.durationS, 20));
  const bench = await startBenchPlatform({ databaseUrl: o.databaseUrl, batchSize: o.batchSize, batchMs: o.batchMs });
  try {
    const [device] = await bench.devices(1);
    const { knex } = bench.platform.db;
    // the trip ended an hour ago: a startup, n - 2 samples at 50 km/h a second apart northwards, a shutdown
    const end = Date.now() - 3_600_000;
    const start = end - (n - 1) * 1000;
    const latAt = (i: number) => 32.7 + (i * 50 / 3.6) / 110_900;
    await createPartitions(knex, MESSAGE_PARTITIONS, new Date(start), new Date(end));
    const built = performance.now();
    // stored and segmented a chunk at a time, in order, as ingest does (segmentation reads what is stored from the
    // batch's first message on)
    const stage = tripsStage({ config: bench.platform.config } as never);
    let previousLatest: Date | null = null;
    for (let from = 0; from < n; from += SEGMENT_CHUNK) {
      const { rows } = await knex.raw(`
        INSERT INTO messages (id, device_id, ts, kind, num, location, received_at)
        SELECT gen_random_uuid(), ?::uuid, to_timestamp((?::float8 + i * 1000) / 1000),
          CASE WHEN i = 0 THEN 'startup' WHEN i = ? - 1 THEN 'shutdown' END,
          message_num(jsonb_build_object('vehicleSpeed', CASE WHEN i IN (0, ? - 1) THEN 0 ELSE 50 END), NULL),
          ST_SetSRID(ST_MakePoint(-96.797, 32.7 + (i * 50 / 3.6) / 110900), 4326), now()
        FROM generate_series(?::int, least(?::int, ?::int) - 1) AS i
        RETURNING id, ts, coalesce(kind, 'telemetry') AS kind, message_data(num, txt, location) AS data`,
      [device.id, start, n, n, from, from + SEGMENT_CHUNK, n]);
      const inserted = rows as { id: string; ts: Date | string; kind: string; data: Record<string, unknown> }[];
      const messages = inserted.sort((a, b) => new Date(a.ts).getTime() - new Date(b.ts).getTime())
        .map((r) => ({ id: r.id, deviceId: device.id, timestamp: new Date(r.ts), kind: r.kind, data: r.data }));
      await knex.transaction(async (trx) => {
        await stage.apply({ trx, devices: [{ deviceId: device.id, previousLatest, messages: messages as never }] });
      });
      previousLatest = messages.at(-1)!.timestamp;
    }
    await knex.raw('ANALYZE messages');
    const buildSeconds = round((performance.now() - built) / 1000, 1);
    const trips = await knex('trips').where({ device_id: device.id });
    if (trips.length !== 1 || Number(trips[0].message_count) !== n) throw new Error(`late-trip: the drive made ${trips.length} trips`);
    const [trip] = trips;

    const client = await connect(bench.mqttUrl, device);
    const topic = `devices/${device.id}/frames`;
    const current: number[] = [];
    const late: number[] = [];
    const healthDuringLate: number[] = [];
    try {
      for (let k = 0; k < rounds; k++) {
        current.push(await publish(client, topic, frameOf(Date.now(), 2 * k, 0, 32.9)));
        // between two stored samples of the trip's middle, a little further along each round
        const i = Math.floor(n / 2) + k;
        const sent = publish(client, topic, frameOf(start + i * 1000 + 500, 2 * k + 1, 50, latAt(i + 0.5)));
        healthDuringLate.push(await slowestHealth(bench.platform.apiUrl, sent));
        late.push(await sent);
      }
    } finally {
      client.end(true);
    }
    const [after] = await knex('trips').where({ id: trip.id });
    const [{ n: stored }] = await knex('messages').where({ device_id: device.id }).count({ n: '*' });
    const refused = await knex('dead_letters').where({ device_id: device.id }).select('reason');
    return {
      scenario: 'late-trip',
      database: bench.database,
      versions: await bench.versions(),
      tripMessages: n,
      buildSeconds,
      rounds,
      tripMessagesAfter: Number(after.message_count),
      framesStored: Number(stored) - n,
      framesRefused: refused.map((r: { reason: string }) => r.reason.slice(0, 200)),
      lateFramesCounted: Number(after.message_count) - Number(trip.message_count),
      pubackMs: {
        currentFrame: { median: round(median(current)!, 1), max: round(Math.max(...current), 1) },
        lateFrame: { median: round(median(late)!, 1), max: round(Math.max(...late), 1) },
      },
      healthDuringLateFrameMs: { median: round(median(healthDuringLate)!, 1), max: round(Math.max(...healthDuringLate), 1) },
      ratioLateToCurrent: round(median(late)! / median(current)!, 2),
      machine: machine(),
    };
  } finally {
    await bench.close();
  }
}

export const lateTripScenario = benchScenario({
  name: 'late-trip',
  description: 'one late frame into a long completed trip (--trip-messages) beside a current frame; PUBACK and /health times',
  run,
  problems: (r) => (r.lateFramesCounted !== r.rounds ? [`late-trip: ${r.rounds} late frames sent, the trip counted ${r.lateFramesCounted}`] : []),
});
