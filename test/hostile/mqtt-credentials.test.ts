// A device whose secret is rotated, or whose dummy is deleted, loses its live MQTT session at once: the session
// closes, what it would publish next is never stored, and only the new secret connects again. A gateway that
// missed the change (another process's, a lost signal) finds it on its periodic check of its sessions' credentials.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAsync, type MqttClient } from 'mqtt';
import { hashSecret, newSecret } from '../../lib/secrets.js';
import { CREDENTIALS_CHANNEL } from '../../db/device-credentials.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connackCode, connectedDevice, goodFrame, within } from './mqtt.helpers.js';

/** The periodic check; a signalled change closes the session well before it. */
const CHECK_MS = 1500;
const AT_ONCE_MS = 1000;
let g: TestGateway;
let admin: string;
beforeAll(async () => {
  g = await startTestGateway({ mqttCredentialsCheckMs: CHECK_MS });
  admin = `Bearer ${await g.t.repos.applications.createAdminToken()}`;
});
afterAll(async () => { await g?.close(); });

const closedAt = (client: MqttClient) => new Promise<number>((resolve) => client.once('close', () => resolve(Date.now())));

/** Publishes a QoS 1 frame every 50 ms until the connection closes (or `ms` pass); resolves with the rpm values sent. */
async function keepPublishing(client: MqttClient, deviceId: string, from: number, ms: number): Promise<number[]> {
  client.on('error', () => undefined);
  const sent: number[] = [];
  const until = Date.now() + ms;
  for (let rpm = from; Date.now() < until && client.connected; rpm++) {
    sent.push(rpm);
    client.publish(`devices/${deviceId}/frames`, goodFrame(rpm), { qos: 1 });
    await new Promise((r) => setTimeout(r, 50));
  }
  return sent;
}

describe('a device whose credentials change', () => {
  it('loses its session when its secret is rotated; its later frames are not stored; the new secret connects', async () => {
    const dev = await connectedDevice(g);
    await dev.publish(goodFrame(1000));
    const closed = closedAt(dev.client);
    const started = Date.now();
    const res = await g.t.app.inject({ method: 'POST', url: `/admin/v1/devices/${dev.d.id}/secret`, headers: { authorization: admin } });
    expect(res.statusCode).toBe(200);
    const sent = await keepPublishing(dev.client, dev.d.id, 2000, 3000);
    expect(await within(closed, 'the session closing', 3000) - started).toBeLessThan(AT_ONCE_MS); // not the periodic check
    expect(sent.length).toBeLessThan(10);
    await new Promise((r) => setTimeout(r, 300));
    // Only what was in flight when the rotation committed may have been stored.
    expect((await dev.storedRpm()).filter((rpm) => rpm >= 2000).length).toBeLessThanOrEqual(1);

    const opts = { username: dev.d.id, clientId: dev.d.id, reconnectPeriod: 0, connectTimeout: 4000 };
    expect(await connackCode(connectAsync(g.url, { ...opts, password: dev.d.secret }))).toBe(5);
    const renewed = await g.connect({ id: dev.d.id, secret: res.json().device.secret });
    await within(renewed.publishAsync(`devices/${dev.d.id}/frames`, goodFrame(3000), { qos: 1 }), 'PUBACK');
    expect((await dev.storedRpm()).at(-1)).toBe(3000);
  });

  it("loses the dummy device's session when the dummy is deleted", async () => {
    const app = await g.t.make.application();
    const created = await g.t.app.inject({ method: 'POST', url: '/api/v1/dummies', headers: { authorization: app.auth }, payload: { dummy: { name: 'gone' } } });
    expect(created.statusCode).toBe(201);
    const dummy = await g.t.db.knex('dummies').where({ id: created.json().dummy.id }).first();
    const client = await g.connect({ id: dummy.device_id, secret: dummy.device_secret });
    const closed = closedAt(client);
    const started = Date.now();
    const res = await g.t.app.inject({ method: 'DELETE', url: `/api/v1/dummies/${dummy.id}`, headers: { authorization: app.auth } });
    expect(res.statusCode).toBe(204);
    expect(await within(closed, 'the session closing', 3000) - started).toBeLessThan(AT_ONCE_MS);
  });

  it('loses its session within the check period when its secret changed without a signal (another process, a lost signal)', async () => {
    const dev = await connectedDevice(g);
    const other = await connectedDevice(g);
    const closed = closedAt(dev.client);
    await g.t.db.knex('devices').where({ id: dev.d.id }).update({ secret_hash: hashSecret(newSecret()) });
    const changed = Date.now();
    expect(await within(closed, 'the session closing', CHECK_MS * 3) - changed).toBeLessThan(CHECK_MS * 2);
    await new Promise((r) => setTimeout(r, CHECK_MS * 1.5));
    expect(other.client.connected).toBe(true); // a device whose secret did not change keeps its session
    await other.publish(goodFrame(4000));
    expect(await other.storedRpm()).toEqual([4000]);
  });

  it('keeps the session of the new secret while closing the one of the old, both live at the check', async () => {
    const dev = await connectedDevice(g);
    const secret = newSecret();
    const oldClosed = closedAt(dev.client);
    await g.t.db.knex('devices').where({ id: dev.d.id }).update({ secret_hash: hashSecret(secret) }); // no signal
    // Another session of the device, authenticated with the new secret (its client id spelled in upper case: the
    // broker keeps it apart from the first session, so both are live when the periodic check runs).
    const renewed = await g.connect({ id: dev.d.id, secret }, { clientId: dev.d.id.toUpperCase() });
    const renewedClosed = closedAt(renewed);
    await within(oldClosed, 'the old session closing', CHECK_MS * 3);
    await new Promise((r) => setTimeout(r, CHECK_MS * 1.5)); // another check
    const first = await Promise.race([renewedClosed.then(() => 'closed'), Promise.resolve('open')]);
    expect(first).toBe('open');
    await within(renewed.publishAsync(`devices/${dev.d.id}/frames`, goodFrame(5000), { qos: 1 }), 'PUBACK');
    expect(await dev.storedRpm()).toEqual([5000]);
  });

  it.runIf(process.env.TEST_DATABASE_URL)('loses its session at once on a change another process announced (PostgreSQL NOTIFY)', async () => {
    const dev = await connectedDevice(g);
    const closed = closedAt(dev.client);
    const started = Date.now();
    // What another process's rotation commits: the new hash and the notification, no in-process signal here.
    await g.t.db.knex.transaction(async (trx) => {
      await trx('devices').where({ id: dev.d.id }).update({ secret_hash: hashSecret(newSecret()) });
      await trx.raw('SELECT pg_notify(?, ?)', [CREDENTIALS_CHANNEL, dev.d.id]);
    });
    expect(await within(closed, 'the session closing', 3000) - started).toBeLessThan(AT_ONCE_MS);
  });
});
