// One device flooding the gateway must not slow the others: each device has a rate limit in frames/s and bytes/s
// (a token bucket with a burst). Over it, a QoS 0 payload is refused, counted by reason, and one dead letter per
// device per minute keeps a sample; a QoS 1 payload waits for its PUBACK until the device is within its limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, eventually, type TestGateway } from '../helpers/gateway.js';
import mqttPacket from 'mqtt-packet';
import { connectedDevice, metric, rawMqtt, within } from './mqtt.helpers.js';
import { storedMessages } from '../helpers/telemetry.factory.js';

let g: TestGateway;
// 200 frames at once, then one frame every 10 s (none within a test); bytes: 10,000 at once, then 1 byte every 10 s
beforeAll(async () => {
  g = await startTestGateway({ deviceFramesPerSecond: 0.1, deviceFramesBurst: 200, deviceBytesPerSecond: 0.1, deviceBytesBurst: 10_000 });
});
afterAll(async () => { await g?.close(); });

const base = Date.now() - 60_000;
/** A payload of `n` frames of the device numbered from `from` (rpm = number, one ms apart), each ~50 bytes. */
const frames = (from: number, n: number) =>
  JSON.stringify(Array.from({ length: n }, (_, k) => ({ id: `${from + k}`, ts: base + from + k, data: { rpm: from + k } })));
const refused = (reason: string) => metric(g, `drivewire_gateway_frames_refused_total{reason="${reason}"}`);
const payloads = () => metric(g, 'drivewire_gateway_payloads_received_total');

describe('a device flooding QoS 0 payloads', () => {
  it('is refused beyond its rate, counted by reason, with one dead letter, while another device\'s frames are all stored and acknowledged', async () => {
    const flood = await connectedDevice(g);
    const other = await connectedDevice(g);
    const [before, received] = [await refused('rate_frames'), await payloads()];
    // 40 payloads of 100 frames, as fast as the client writes them (no acknowledgement to wait for)
    const sent = Array.from({ length: 40 }, (_, k) => frames(k * 100, 100));
    for (const payload of sent) flood.client.publish(`devices/${flood.d.id}/frames`, payload, { qos: 0 });
    const rpm = Array.from({ length: 20 }, (_, k) => k + 1);
    await within(Promise.all(rpm.map((r) => other.client.publishAsync(`devices/${other.d.id}/frames`,
      JSON.stringify({ id: `o${r}`, ts: base + r, data: { rpm: r } }), { qos: 1 }))), 'the other device\'s PUBACKs');
    expect(await other.storedRpm()).toEqual(rpm);
    await eventually(payloads, (n) => n >= received + 60, 15_000);
    // the burst (200 frames) took the first two payloads; the other 38 were refused before being decoded (after each
    // refusal the connection is read no further for up to a second, hence the longer wait)
    expect(await payloads()).toBe(received + 60);
    expect(await refused('rate_frames')).toBe(before + 38);
    expect(await eventually(() => flood.storedRpm(), (r) => r.length >= 200)).toEqual(Array.from({ length: 200 }, (_, k) => k));
    const letters = await eventually(() => flood.letters(), (l) => l.length > 0);
    expect(letters).toEqual([{
      frameIndex: null,
      reason: 'payload refused: the device is over its rate limit of 0.1 frames/s (burst 200); '
        + 'its further refusals within 60 s are counted, not kept',
      raw: sent[2].slice(0, 4096),
    }]);
    expect(flood.client.connected).toBe(true);
    expect(other.client.connected).toBe(true);
  });

  it('is refused beyond its bytes/s, counted as rate_bytes', async () => {
    const dev = await connectedDevice(g);
    const before = await refused('rate_bytes');
    const received = await payloads();
    // five payloads of one frame padded to ~4,000 bytes (an unknown field, ignored): 10,000 bytes at once take three
    const sent = Array.from({ length: 5 }, (_, k) => JSON.stringify({ id: `b${k}`, ts: base + k, data: { rpm: k }, padding: 'x'.repeat(4000) }));
    for (const payload of sent) dev.client.publish(`devices/${dev.d.id}/frames`, payload, { qos: 0 });
    await eventually(payloads, (n) => n >= received + 5, 15_000);
    expect(await refused('rate_bytes')).toBe(before + 2);
    expect(await eventually(() => dev.storedRpm(), (r) => r.length >= 3)).toEqual([0, 1, 2]);
    const [letter] = await eventually(() => dev.letters(), (l) => l.length > 0);
    expect(letter.reason).toBe('payload refused: the device is over its rate limit of 0.1 bytes/s (burst 10000); '
      + 'its further refusals within 60 s are counted, not kept');
  });
});

describe('a device over its rate at QoS 1', () => {
  let q: TestGateway;
  beforeAll(async () => { q = await startTestGateway({ deviceFramesPerSecond: 20, deviceFramesBurst: 10 }); });
  afterAll(async () => { await q?.close(); });

  it('gets its PUBACKs once within its limit: every frame stored, in order, none refused', async () => {
    const dev = await connectedDevice(q);
    const refusedBefore = await metric(q, 'drivewire_gateway_frames_refused_total{reason="rate_frames"}');
    const started = Date.now();
    // 30 frames at once: 10 at once (the burst), the other 20 at 20 frames/s
    await within(Promise.all(Array.from({ length: 30 }, (_, k) => dev.publish(JSON.stringify({ id: `${k}`, ts: base + k, data: { rpm: k } })))),
      'PUBACKs', 10_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const rows = await storedMessages(q.t.db.knex).where('device_id', dev.d.id).orderBy('ts');
    expect(rows.map((r) => r.data.rpm)).toEqual(Array.from({ length: 30 }, (_, k) => k));
    // taken in the order they came: received (admitted) times never go back
    const received = rows.map((r) => new Date(r.received_at).getTime());
    expect(received).toEqual([...received].sort((a, b) => a - b));
    expect(await metric(q, 'drivewire_gateway_frames_refused_total{reason="rate_frames"}')).toBe(refusedBefore);
    expect(await metric(q, 'drivewire_gateway_payloads_delayed_total{reason="rate_frames"}')).toBeGreaterThanOrEqual(19);
    expect(await dev.letters()).toEqual([]);
  });
});

describe('a device publishing past its limit, at any QoS', () => {
  it('has none of its payloads routed by the broker: neither those taken nor a refused QoS 0 one', async () => {
    const dev = await connectedDevice(g);
    const routed: string[] = [];
    await new Promise<void>((resolve) => g.gw.broker.subscribe(`devices/${dev.d.id}/frames`, (packet, cb) => { routed.push(packet.topic); cb(); }, resolve));
    const before = await refused('rate_frames');
    // 300 frames in three QoS 0 payloads: the burst (200) takes two, the third is refused
    for (let k = 0; k < 3; k++) dev.client.publish(`devices/${dev.d.id}/frames`, frames(10_000 + k * 100, 100), { qos: 0 });
    await eventually(() => refused('rate_frames'), (n) => n >= before + 1, 10_000);
    expect(await refused('rate_frames')).toBe(before + 1);
    expect((await eventually(() => dev.storedRpm(), (r) => r.length >= 200)).length).toBe(200);
    expect(routed).toEqual([]);
  });
});

describe('a device whose QoS 1 payloads wait for its rate limit', () => {
  let w: TestGateway;
  // one frame at once, then one every 2 s; at most 600 payload bytes waiting per device
  beforeAll(async () => { w = await startTestGateway({ deviceFramesPerSecond: 0.5, deviceFramesBurst: 1, deviceWaitingBytes: 600 }); });
  afterAll(async () => { await w?.close(); });

  const one = (rpm: number) => JSON.stringify({ ts: base + rpm, data: { rpm } }); // no id: nothing dedupes it
  const publish1 = (deviceId: string, rpm: number, messageId: number) =>
    mqttPacket.generate({ cmd: 'publish', topic: `devices/${deviceId}/frames`, payload: Buffer.from(one(rpm)), qos: 1, dup: false, retain: false, messageId });
  const refusedOn = (reason: string) => metric(w, `drivewire_gateway_frames_refused_total{reason="${reason}"}`);

  it('has those of a connection that closed meanwhile not stored; the device\'s next connection is served', async () => {
    const d = await w.t.make.device();
    const gone = await refusedOn('gone');
    const c = await rawMqtt(w.gw.ports.mqtt);
    expect((await c.connect(d)).returnCode).toBe(0);
    c.socket.write(Buffer.concat([1, 2, 3].map((rpm) => publish1(d.id, rpm, rpm))));
    expect((await c.next('puback')).messageId).toBe(1); // the burst; 2 and 3 wait
    await c.end(); // unacknowledged, the device would send them again
    const again = await w.connect(d);
    await within(again.publishAsync(`devices/${d.id}/frames`, one(4), { qos: 1 }), 'PUBACK', 15_000);
    const rpm = (await storedMessages(w.t.db.knex).where('device_id', d.id).orderBy('ts')).map((r) => r.data.rpm);
    expect(rpm).toEqual([1, 4]);
    expect(await refusedOn('gone')).toBe(gone + 2);
  });

  it('closes a connection past the device\'s waiting bytes, counted as rate_queue; none of its waiting payloads is stored', async () => {
    const d = await w.t.make.device();
    const queued = await refusedOn('rate_queue');
    const c = await rawMqtt(w.gw.ports.mqtt);
    expect((await c.connect(d)).returnCode).toBe(0);
    // 30 payloads of ~60 bytes in one write (Aedes dispatches them at once): the first is taken, ten may wait
    c.socket.write(Buffer.concat(Array.from({ length: 30 }, (_, k) => publish1(d.id, 100 + k, k + 1))));
    await within(c.closed, 'the server closing the connection', 5000);
    expect(await refusedOn('rate_queue')).toBeGreaterThan(queued);
    const again = await w.connect(d);
    await within(again.publishAsync(`devices/${d.id}/frames`, one(500), { qos: 1 }), 'PUBACK', 15_000);
    const rpm = (await storedMessages(w.t.db.knex).where('device_id', d.id).orderBy('ts')).map((r) => r.data.rpm);
    expect(rpm).toEqual([100, 500]);
  });
});
