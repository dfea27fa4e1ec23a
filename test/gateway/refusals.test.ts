import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storedMessages } from '../helpers/telemetry.factory.js';
import { slotOf } from '../../db/message-data.sql.js';

let g: TestGateway;
beforeAll(async () => { g = await startTestGateway({ maxPayloadBytes: 4096 }); });
afterAll(async () => { await g?.close(); });

const ts = () => new Date(Date.now() - 1000).toISOString();

async function device() {
  const app = await g.t.make.application();
  const d = await g.t.make.device(app.principal);
  const client = await g.connect(d);
  const publish = (payload: string | Buffer) => client.publishAsync(`devices/${d.id}/frames`, payload, { qos: 1 });
  // the payload's frames often share a millisecond: then in rpm order (nothing orders messages by arrival)
  const stored = async () => (await storedMessages(g.t.db.knex).where('device_id', d.id).orderBy('ts').orderByRaw(`num[${slotOf('rpm')}]`))
    .map((r) => r.data);
  const letters = async () => (await g.t.repos.ingest.deadLetters(d.id)).reverse()
    .map((l) => ({ topic: l.topic, frameIndex: l.frameIndex, reason: l.reason, raw: l.raw?.toString('utf8') }));
  return { d, client, publish, stored, letters };
}

const refusedCount = async (reason: string) => {
  const text = await g.gw.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`drivewire_gateway_frames_refused_total{reason="${reason}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
};

describe('refused frames', () => {
  const BAD: [string, unknown, string, string][] = [
    ['a frame without ts', { data: { rpm: 900 } }, 'frame 1: ts is missing', 'ts'],
    ['a frame whose ts is not a date', { ts: '2024-13-45T00:00:00Z' }, 'frame 1: ts "2024-13-45T00:00:00Z" is not a valid date', 'ts'],
    ['a location out of range', { ts: 'TS', location: { lat: 91, lon: 0 } }, 'frame 1: location.lat 91 is out of range -90..90', 'location'],
    ['a PID that cannot be decoded', { ts: 'TS', pids: { '0C': '1A' } }, 'frame 1: pids: PID 0C: expected 2 data bytes, got 1', 'pid'],
    ['a value of the wrong type', { ts: 'TS', data: { vehicleSpeed: 'fast' } },
      'frame 1: data.vehicleSpeed must be a number between 0 and 255, got "fast"', 'value'],
    ['a string value holding NUL', { ts: 'TS', data: { fuelType: 'Gas\u0000oline' } },
      'frame 1: value contains a NUL character (\\u0000), which cannot be stored', 'value'],
  ];

  it.each(BAD)('refuses %s with its reason and stores the good frames of the payload', async (_, bad, reason, label) => {
    const { publish, stored, letters } = await device();
    const before = await refusedCount(label);
    const badFrame = JSON.parse(JSON.stringify(bad).replace('"TS"', JSON.stringify(ts())));
    await publish(JSON.stringify([{ ts: ts(), data: { rpm: 800 } }, badFrame, { ts: ts(), data: { rpm: 900 } }]));
    expect(await stored()).toEqual([{ rpm: 800 }, { rpm: 900 }]);
    const [letter] = await letters();
    expect(letter).toMatchObject({ frameIndex: 1, reason });
    expect(await refusedCount(label)).toBe(before + 1);
  });

  it('keeps the refused frame itself as the dead letter\'s raw bytes', async () => {
    const { d, publish, letters } = await device();
    await publish(JSON.stringify([{ ts: ts() }, { ts: ts(), location: { lat: 0, lon: 200 } }]));
    const frame = JSON.parse((await letters())[0].raw!);
    expect(frame).toEqual({ ts: expect.any(String), location: { lat: 0, lon: 200 } });
    expect((await letters())[0].topic).toBe(`devices/${d.id}/frames`);
  });

  it('keeps a frame refused for a NUL character as that frame, not the whole payload', async () => {
    const { publish, stored, letters } = await device();
    const at = ts();
    await publish(JSON.stringify([{ ts: ts(), data: { rpm: 800 } }, { id: 'n', ts: at, data: { fuelType: 'Gas\u0000oline' } }, { ts: ts(), data: { rpm: 900 } }]));
    expect(await stored()).toEqual([{ rpm: 800 }, { rpm: 900 }]);
    const [letter] = await letters();
    expect(JSON.parse(letter.raw!)).toEqual({ id: 'n', ts: at, kind: 'telemetry', data: { fuelType: 'Gas\u0000oline' } });
  });
});

describe('refused payloads', () => {
  it('refuses a payload that is not JSON, keeps its bytes, and the connection carries on', async () => {
    const { publish, stored, letters } = await device();
    await publish('{"ts": nope');
    await publish(JSON.stringify({ ts: ts(), data: { rpm: 1000 } }));
    expect(await letters()).toEqual([{
      topic: expect.stringMatching(/\/frames$/), frameIndex: null, raw: '{"ts": nope',
      reason: expect.stringMatching(/^payload is not JSON: /),
    }]);
    expect(await stored()).toEqual([{ rpm: 1000 }]);
  });

  it('refuses a payload over the configured size limit and keeps its first bytes up to the limit', async () => {
    const { publish, stored, letters } = await device();
    const before = await refusedCount('oversize');
    const big = JSON.stringify([{ ts: ts(), data: { fuelType: 'x'.repeat(5000) } }]);
    await publish(big);
    const [letter] = await letters();
    expect(letter.reason).toBe(`payload of ${Buffer.byteLength(big)} bytes exceeds the 4096-byte limit`);
    expect(letter.raw).toBe(big.slice(0, 4096));
    expect(await stored()).toEqual([]);
    expect(await refusedCount('oversize')).toBe(before + 1);
  });

  it('refuses a payload that is neither a frame nor an array of frames', async () => {
    const { publish, letters } = await device();
    await publish('[]');
    await publish('"hello"');
    expect((await letters()).map((l) => l.reason)).toEqual([
      'payload is an empty array', 'payload must be a frame object or an array of frames, got a string',
    ]);
  });

  it('counts received, stored and refused frames in the metrics', async () => {
    const { publish } = await device();
    const text = async () => g.gw.metrics();
    const value = (t: string, name: string) => Number(t.split('\n').find((l) => l.startsWith(`${name} `))!.split(' ')[1]);
    const before = await text();
    await publish(JSON.stringify([{ ts: ts() }, { ts: ts(), kind: 'boot' }, { ts: ts() }]));
    const after = await text();
    expect(value(after, 'drivewire_gateway_frames_received_total') - value(before, 'drivewire_gateway_frames_received_total')).toBe(3);
    expect(value(after, 'drivewire_gateway_frames_stored_total') - value(before, 'drivewire_gateway_frames_stored_total')).toBe(2);
    expect(after).toMatch(/drivewire_gateway_frames_refused_total\{reason="kind"\} 1/);
    expect(after).toMatch(/drivewire_ingest_commit_seconds_count \d+/);
    expect(after).toMatch(/drivewire_gateway_connected_devices \d+/);
  });
});
