import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAsync } from 'mqtt';
import { loadConfig } from '../../lib/config.js';
import { createBus } from '../../lib/bus.js';
import { silentLogger } from '../../lib/logger.js';
import { PortInUseError } from '../../lib/errors.js';
import { startGateway } from '../../gateway/gateway.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/gateway');
const cert = path.join(fixtures, 'tls-cert.pem');

let g: TestGateway;
beforeAll(async () => {
  g = await startTestGateway({ mqttWsPort: 0, mqttTlsPort: 0, mqttTlsCert: cert, mqttTlsKey: path.join(fixtures, 'tls-key.pem') });
});
afterAll(async () => { await g?.close(); });

const frame = () => JSON.stringify({ ts: new Date(Date.now() - 1000).toISOString(), data: { rpm: 1234 } });
const stored = (deviceId: string) => g.t.db.knex('messages').where('device_id', deviceId).count({ n: '*' }).then(([r]) => Number(r.n));
const refusedCode = (p: Promise<unknown>) => p.then(() => 'connected', (err: { code?: number }) => err.code);

describe('authentication', () => {
  it('accepts the device id and its secret', async () => {
    const d = await g.t.make.device();
    const client = await g.connect(d);
    expect(client.connected).toBe(true);
  });

  it('accepts the device id in upper case, and stores its frames under the device', async () => {
    const d = await g.t.make.device();
    const client = await g.connect({ id: d.id.toUpperCase(), secret: d.secret });
    await client.publishAsync(`devices/${d.id.toUpperCase()}/frames`, frame(), { qos: 1 });
    await client.publishAsync(`devices/${d.id}/frames`, frame(), { qos: 1 });
    expect(await stored(d.id)).toBe(2);
  });

  it('answers CONNACK "not authorized" to a wrong secret, an unknown device and a missing password', async () => {
    const d = await g.t.make.device();
    const opts = { reconnectPeriod: 0, connectTimeout: 5000 };
    expect(await refusedCode(connectAsync(g.url, { ...opts, username: d.id, password: 'wrong' }))).toBe(5);
    expect(await refusedCode(connectAsync(g.url, { ...opts, username: crypto.randomUUID(), password: d.secret }))).toBe(5);
    expect(await refusedCode(connectAsync(g.url, { ...opts, username: 'not-a-device', password: 'x' }))).toBe(5);
    expect(await refusedCode(connectAsync(g.url, { ...opts, username: d.id }))).toBe(5);
  });
});

describe('topics', () => {
  it('refuses a publish under another device\'s topic: the connection closes, nothing is stored, the attempt is kept', async () => {
    const [mine, other] = [await g.t.make.device(), await g.t.make.device()];
    const client = await g.connect(mine);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.publish(`devices/${other.id}/frames`, frame(), { qos: 1 });
    await closed;
    expect(await stored(other.id)).toBe(0);
    const [letter] = await g.t.repos.ingest.deadLetters(mine.id);
    expect(letter).toMatchObject({
      topic: `devices/${other.id}/frames`,
      reason: `publish to devices/${other.id}/frames refused: a device publishes only to devices/<its id>/frames and devices/<its id>/responses`,
    });
  });

  it('refuses a publish to any other topic under the device\'s own, as to another device\'s: the connection closes, the attempt is kept', async () => {
    const d = await g.t.make.device();
    for (const topic of [`devices/${d.id}/FRAMES`, `devices/${d.id}/x`, `devices/${d.id}/frames/x`]) {
      const client = await g.connect(d);
      client.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
      client.publish(topic, frame(), { qos: 0 });
      await closed;
      expect((await g.t.repos.ingest.deadLetters(d.id))[0]).toMatchObject({
        topic, reason: `publish to ${topic} refused: a device publishes only to devices/<its id>/frames and devices/<its id>/responses`,
      });
    }
    expect(await stored(d.id)).toBe(0);
  });

  it('refuses a publish outside devices/', async () => {
    const d = await g.t.make.device();
    const client = await g.connect(d);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.publish('$SYS/anything', 'x', { qos: 0 });
    await closed;
    expect((await g.t.repos.ingest.deadLetters(d.id))[0].topic).toBe('$SYS/anything');
  });

  it('grants only the device\'s own commands topic and refuses other subscriptions with 0x80', async () => {
    const [mine, other] = [await g.t.make.device(), await g.t.make.device()];
    const client = await g.connect(mine);
    const suback = new Promise<number[]>((resolve) => client.on('packetreceive', (p) => {
      if (p.cmd === 'suback') resolve(p.granted as number[]);
    }));
    client.subscribe([`devices/${mine.id}/commands`, `devices/${other.id}/commands`, `devices/${mine.id}/#`, 'devices/+/frames'],
      { qos: 1 }, () => undefined);
    expect(await suback).toEqual([1, 128, 128, 128]);
    expect(client.connected).toBe(true);
  });

  it('delivers a command published by the platform to the device subscribed to it', async () => {
    const d = await g.t.make.device();
    const client = await g.connect(d);
    await client.subscribeAsync(`devices/${d.id}/commands`, { qos: 1 });
    const received = new Promise<string>((resolve) => client.once('message', (_t, payload) => resolve(payload.toString())));
    g.gw.broker.publish({ cmd: 'publish', topic: `devices/${d.id}/commands`, payload: Buffer.from('{"do":"ping"}'), qos: 1, retain: false, dup: false }, () => {});
    expect(await received).toBe('{"do":"ping"}');
  });
});

describe('transports', () => {
  it('takes frames over WebSocket', async () => {
    const d = await g.t.make.device();
    const client = await g.connect(d, { url: `ws://127.0.0.1:${g.gw.ports.ws}` });
    await client.publishAsync(`devices/${d.id}/frames`, frame(), { qos: 1 });
    expect(await stored(d.id)).toBe(1);
  });

  it('takes frames over TLS', async () => {
    const d = await g.t.make.device();
    const client = await g.connect(d, { url: `mqtts://localhost:${g.gw.ports.tls}`, ca: fs.readFileSync(cert) });
    await client.publishAsync(`devices/${d.id}/frames`, frame(), { qos: 1 });
    expect(await stored(d.id)).toBe(1);
  });

  it('reports a port in use with the port and the flag to change it', async () => {
    const config = loadConfig({ mqttPort: g.gw.ports.mqtt, mqttHost: '127.0.0.1', logLevel: 'silent' }, {});
    const start = startGateway({ config, db: g.t.db, repos: g.t.repos, log: silentLogger, bus: createBus() });
    await expect(start).rejects.toThrow(PortInUseError);
    await expect(start).rejects.toThrow(`Port ${g.gw.ports.mqtt} (MQTT) is already in use; choose another with --mqtt-port`);
  });
});

describe('health', () => {
  it('reports the database and the broker up on GET /health', async () => {
    const res = await g.t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', checks: { database: true, broker: true } });
  });

  it('serves the gateway metrics as Prometheus text on GET /metrics', async () => {
    const res = await g.t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toMatch(/# TYPE drivewire_gateway_frames_received_total counter/);
    expect(res.body).toMatch(/# TYPE drivewire_ingest_queue_depth gauge/);
  });
});
