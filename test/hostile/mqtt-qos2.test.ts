// QoS 2 is exactly once: a PUBLISH re-sent with DUP=1 and the same packet id before its PUBREL (MQTT 3.1.1 §4.3.3)
// is acknowledged again and stored once, on the same connection and after a reconnection to a persistent session.
import mqttPacket from 'mqtt-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { goodFrame, rawMqtt, stillServing } from './mqtt.helpers.js';
import { storedMessages } from '../helpers/telemetry.factory.js';

let g: TestGateway;
beforeAll(async () => { g = await startTestGateway(); });
afterAll(async () => { await g?.close(); });

const stored = async (deviceId: string) => (await storedMessages(g.t.db.knex).where('device_id', deviceId).orderBy('ts'))
  .map((r) => r.data.rpm as number);

const publish2 = (topic: string, payload: string, messageId: number, dup = false) =>
  ({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 2, dup, retain: false, messageId });

describe('QoS 2 uplink', () => {
  it('stores a PUBLISH re-sent with DUP before PUBREL once, on one connection', async () => {
    const d = await g.t.make.device((await g.t.make.application()).principal);
    const c = await rawMqtt(g.gw.ports.mqtt);
    expect((await c.connect(d)).returnCode).toBe(0);
    const frame = goodFrame(1200);
    c.send(publish2(`devices/${d.id}/frames`, frame, 7));
    expect((await c.next('pubrec')).messageId).toBe(7);
    c.send(publish2(`devices/${d.id}/frames`, frame, 7, true)); // the PUBREC was "lost": the device sends again
    expect((await c.next('pubrec')).messageId).toBe(7);
    c.send({ cmd: 'pubrel', messageId: 7 });
    expect((await c.next('pubcomp')).messageId).toBe(7);
    expect(await stored(d.id)).toEqual([1200]);
    await c.end();
  });

  it('stores two copies of a QoS 2 PUBLISH arriving in one TCP segment once', async () => {
    const d = await g.t.make.device((await g.t.make.application()).principal);
    const c = await rawMqtt(g.gw.ports.mqtt);
    expect((await c.connect(d)).returnCode).toBe(0);
    const frame = goodFrame(1300);
    const p = (dup: boolean) => mqttPacket.generate(publish2(`devices/${d.id}/frames`, frame, 9, dup) as never);
    c.socket.write(Buffer.concat([p(false), p(true)]));
    expect((await c.next('pubrec')).messageId).toBe(9);
    expect((await c.next('pubrec')).messageId).toBe(9);
    c.send({ cmd: 'pubrel', messageId: 9 });
    expect((await c.next('pubcomp')).messageId).toBe(9);
    expect(await stored(d.id)).toEqual([1300]);
    await c.end();
  });

  it('stores a PUBLISH re-sent with DUP after a reconnection to the persistent session once; PUBREL then completes it', async () => {
    const d = await g.t.make.device((await g.t.make.application()).principal);
    const first = await rawMqtt(g.gw.ports.mqtt);
    expect((await first.connect(d, false)).returnCode).toBe(0);
    first.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `devices/${d.id}/commands`, qos: 1 }] });
    expect((await first.next<mqttPacket.ISubackPacket>('suback')).granted).toEqual([1]);
    const frame = goodFrame(1400);
    first.send(publish2(`devices/${d.id}/frames`, frame, 42));
    expect((await first.next('pubrec')).messageId).toBe(42);
    await first.end(); // the connection drops before the device sent PUBREL

    const again = await rawMqtt(g.gw.ports.mqtt);
    expect(await again.connect(d, false)).toMatchObject({ returnCode: 0, sessionPresent: true });
    again.send(publish2(`devices/${d.id}/frames`, frame, 42, true));
    expect((await again.next('pubrec')).messageId).toBe(42);
    again.send({ cmd: 'pubrel', messageId: 42 });
    expect((await again.next('pubcomp')).messageId).toBe(42);
    // After PUBREL the id is free again: a new publish under it is a new message.
    again.send(publish2(`devices/${d.id}/frames`, goodFrame(1500), 42));
    expect((await again.next('pubrec')).messageId).toBe(42);
    again.send({ cmd: 'pubrel', messageId: 42 });
    await again.next('pubcomp');
    expect(await stored(d.id)).toEqual([1400, 1500]);
    await again.end();
    await stillServing(g);
  });
});

describe('QoS 2 uplink whose first copy is still being committed when the connection drops', () => {
  let slow: TestGateway;
  // a batch commits 1.5 s after its first payload: the connection drops, and the copy is re-sent, before that
  beforeAll(async () => { slow = await startTestGateway({ ingestBatchMs: 1500 }); });
  afterAll(async () => { await slow?.close(); });

  it('stores the copy re-sent with DUP on the next connection once (Aedes never stored the packet id of the first)', async () => {
    const d = await slow.t.make.device((await slow.t.make.application()).principal);
    const frame = goodFrame(1600); // no frame id: only the packet id can tell the copies apart
    const first = await rawMqtt(slow.gw.ports.mqtt);
    expect((await first.connect(d, false)).returnCode).toBe(0);
    first.send(publish2(`devices/${d.id}/frames`, frame, 11));
    await new Promise((r) => setTimeout(r, 100)); // taken, its commit pending
    await first.end();

    const again = await rawMqtt(slow.gw.ports.mqtt);
    expect((await again.connect(d, false)).returnCode).toBe(0);
    again.send(publish2(`devices/${d.id}/frames`, frame, 11, true));
    expect((await again.next('pubrec')).messageId).toBe(11);
    again.send({ cmd: 'pubrel', messageId: 11 });
    expect((await again.next('pubcomp')).messageId).toBe(11);
    const rows = await storedMessages(slow.t.db.knex).where('device_id', d.id);
    expect(rows.map((r) => r.data.rpm)).toEqual([1600]);
    await again.end();
  });
});
