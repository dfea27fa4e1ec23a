// Values a frame may carry that JSON and a finite-number check allow but float8 arithmetic does not: accelerometer
// axes of ±1e200 would overflow the collision statement's squares, fail their batch, fail again retried alone and
// end as dead letters holding the whole payload and the SQL text. Every numeric field has a plausible range,
// checked at decode: such a frame is refused once, with a short reason, and the good frames beside it are stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectedDevice, metric, stillServing, ts } from './mqtt.helpers.js';

let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const hostileFrame = (i: number) => ({
  id: `h${i}`, ts: ts(),
  accel: { maxX: 1e200, maxY: -1e200, maxZ: 1e200, minX: -1e200, minY: 1e200, minZ: -1e200 },
});

/** Frames of ±1e200 accelerometer values until the payload is ~254 KB; every `goodEvery`-th frame a good one (rpm = its index). */
function hostilePayload(goodEvery = 0): { payload: string; frames: unknown[] } {
  const frames: unknown[] = [];
  let bytes = 2;
  for (let i = 0; bytes < 254 * 1024 - 200; i++) {
    const frame = goodEvery && i % goodEvery === 0 ? { id: `g${i}`, ts: ts(), data: { rpm: i } } : hostileFrame(i);
    frames.push(frame);
    bytes += JSON.stringify(frame).length + 1;
  }
  return { payload: JSON.stringify(frames), frames };
}

/** Every dead letter of the device, oldest first (the helper's `letters` reads the newest 100). */
const allLetters = async (deviceId: string) => (await g.t.db.knex('dead_letters').where('device_id', deviceId).orderBy('id'))
  .map((l) => ({ frameIndex: l.frame_index as number, reason: l.reason as string, raw: Buffer.from(l.raw).toString('utf8') }));
const batchFailures = () => metric(g, 'drivewire_ingest_batch_failures_total');
const accelRefusals = () => metric(g, 'drivewire_gateway_frames_refused_total{reason="accel"}');

describe('numeric values beyond their plausible range', () => {
  it('refuses two 254 KB payloads of ±1e200 accelerometer frames at decode, without failing a batch, one short dead letter per frame', async () => {
    const dev = await connectedDevice(g);
    const [failures, refusals] = [await batchFailures(), await accelRefusals()];
    let total = 0;
    for (let k = 0; k < 2; k++) {
      const { payload, frames } = hostilePayload();
      expect(payload.length).toBeGreaterThan(250 * 1024);
      await dev.publish(payload);
      total += frames.length;
      const letters = await allLetters(dev.d.id);
      expect(letters).toHaveLength(total);
      const last = letters.slice(total - frames.length);
      last.forEach((l, i) => {
        expect(l.frameIndex).toBe(i);
        expect(l.reason).toBe(`frame ${i}: accel.maxX 1e+200 is out of range -2000..2000`);
        expect(JSON.parse(l.raw!)).toEqual(frames[i]); // the frame itself, not the payload
      });
    }
    expect(await batchFailures()).toBe(failures);
    expect(await accelRefusals()).toBe(refusals + total);
    expect(await dev.storedRpm()).toEqual([]);
    expect(dev.client.connected).toBe(true);
    await stillServing(g);
  });

  it('stores the good frames of a payload whose other frames carry values out of range', async () => {
    const dev = await connectedDevice(g);
    const { payload, frames } = hostilePayload(100);
    await dev.publish(payload);
    const good = frames.map((_, i) => i).filter((i) => i % 100 === 0);
    expect(await dev.storedRpm()).toEqual(good);
    expect(await allLetters(dev.d.id)).toHaveLength(frames.length - good.length);
  });

  it.each([
    ['location.speed', { location: { lat: 1, lon: 2, speed: 1e308 } }, 'location.speed 1e+308 is out of range 0..1000'],
    ['location.alt', { location: { lat: 1, lon: 2, alt: -1e300 } }, 'location.alt -1e+300 is out of range -1000..20000'],
    ['location.hdop', { location: { lat: 1, lon: 2, hdop: 1e154 } }, 'location.hdop 1e+154 is out of range 0..100'],
    ['an untyped parameter', { data: { turbochargerRPM: 1e308 } }, 'data.turbochargerRPM must be a string or a number between -4294967295 and 4294967295, got 1e+308'],
    ['collision.peakG', { collision: { peakG: 1e200 } }, 'collision.peakG 1e+200 is out of range 0..1000'],
  ])('refuses a frame whose %s is out of its range, once, without failing a batch', async (_, fields, reason) => {
    const dev = await connectedDevice(g);
    const failures = await batchFailures();
    await dev.publish(JSON.stringify([{ ts: ts(), data: { rpm: 1 } }, { ts: ts(), ...fields }]));
    expect((await dev.letters()).map((l) => [l.frameIndex, l.reason])).toEqual([[1, `frame 1: ${reason}`]]);
    expect(await dev.storedRpm()).toEqual([1]);
    expect(await batchFailures()).toBe(failures);
  });
});
