// Two gateways over one database sharing their MQTT state through Redis, as `serve --only gateway --mqtt-redis-url`
// runs them: what a device's session holds must hold on either. Runs only with TEST_REDIS_URL
// (e.g. redis://127.0.0.1:6379/7); each run uses its own key and channel prefix and deletes its keys.
import { describe, expect, it } from 'vitest';
import { gatewaysOnRedis } from '../helpers/gateway.js';
import { goodFrame, rawMqtt, within } from './mqtt.helpers.js';
import { storedMessages } from '../helpers/telemetry.factory.js';

const redisUrl = process.env.TEST_REDIS_URL;

describe.runIf(redisUrl)('a device session on two gateways sharing Redis', () => {
  const gws = gatewaysOnRedis(redisUrl!);

  const stored = async (deviceId: string) => (await storedMessages(gws.a.t.db.knex).where('device_id', deviceId).orderBy('ts'))
    .map((r) => r.data.rpm as number);

  it('stores a QoS 2 PUBLISH re-sent with DUP on the other gateway, after a reconnection before PUBREL, once', async () => {
    const d = await gws.a.t.make.device((await gws.a.t.make.application()).principal);
    const frame = goodFrame(2100);
    const publish = (dup: boolean) => ({ cmd: 'publish', topic: `devices/${d.id}/frames`, payload: Buffer.from(frame), qos: 2, dup, retain: false, messageId: 5 });
    const onA = await rawMqtt(gws.a.gw.ports.mqtt);
    expect((await onA.connect(d, false)).returnCode).toBe(0);
    onA.send(publish(false));
    expect((await onA.next('pubrec')).messageId).toBe(5);
    await onA.end();

    const onB = await rawMqtt(gws.b.ports.mqtt);
    expect((await onB.connect(d, false)).returnCode).toBe(0);
    onB.send(publish(true));
    expect((await onB.next('pubrec')).messageId).toBe(5);
    onB.send({ cmd: 'pubrel', messageId: 5 });
    expect((await onB.next('pubcomp')).messageId).toBe(5);
    expect(await stored(d.id)).toEqual([2100]);
    await onB.end();
  });

  it('closes the session on the other gateway when the secret is rotated; the device reconnects there with the new secret', async () => {
    const d = await gws.a.t.make.device((await gws.a.t.make.application()).principal);
    const admin = `Bearer ${await gws.a.t.repos.applications.createAdminToken()}`;
    const onB = () => ({ url: `mqtt://127.0.0.1:${gws.b.ports.mqtt}` });
    const client = await gws.a.connect(d, onB());
    const closed = new Promise<number>((resolve) => client.once('close', () => resolve(Date.now())));
    const started = Date.now();
    const res = await gws.a.t.app.inject({ method: 'POST', url: `/admin/v1/devices/${d.id}/secret`, headers: { authorization: admin } });
    expect(res.statusCode).toBe(200);
    expect(await within(closed, 'the session on gateway B closing', 3000) - started).toBeLessThan(1000);
    const renewed = await gws.a.connect({ id: d.id, secret: res.json().device.secret }, onB());
    await within(renewed.publishAsync(`devices/${d.id}/frames`, goodFrame(2200), { qos: 1 }), 'PUBACK');
    expect(await stored(d.id)).toEqual([2200]);
  });
});
