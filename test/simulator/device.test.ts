import { createServer, type AddressInfo, type Server } from 'node:net';
import { Aedes, type AuthenticateError, type Client } from 'aedes';
import { connect, type MqttClient } from 'mqtt';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDevice, type DeviceOptions } from '../../simulator/device.js';
import type { GatewayFrame } from '../../simulator/frames.js';
import { loadStoredRoutes, type StoredRoute } from '../../simulator/route.js';

const DEVICE = { deviceId: 'dev-1', secret: 's3cret' };
const VIN = 'VV1AB2CD3EF456789';
const routes = await loadStoredRoutes();
const backHome = routes.find((r) => r.name === 'DFW - Back Home')!; // 87 s drive
const downtown = routes.find((r) => r.name === 'DFW - Downtown Route 1')!; // 499 s drive

interface Received { payload: GatewayFrame | GatewayFrame[]; qos: number; at: number }

let broker: Aedes;
let server: Server;
let url: string;
let subscriber: MqttClient;
let received: Received[];
let brokerQos: number[];
let deviceClients: Client[];

beforeEach(async () => {
  received = [];
  brokerQos = [];
  deviceClients = [];
  broker = await Aedes.createBroker({
    authenticate: (client, username, password, done) => {
      if (client.id === 'watcher') return done(null, true);
      const ok = client.id === DEVICE.deviceId && username === DEVICE.deviceId && password?.toString() === DEVICE.secret;
      if (ok) return done(null, true);
      const err = Object.assign(new Error('bad credentials'), { returnCode: 5 }) as AuthenticateError;
      return done(err, false);
    },
  });
  broker.on('client', (c) => { if (c.id === DEVICE.deviceId) deviceClients.push(c); });
  broker.on('publish', (packet, client) => { if (client?.id === DEVICE.deviceId) brokerQos.push(packet.qos); });
  server = createServer(broker.handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `mqtt://127.0.0.1:${(server.address() as AddressInfo).port}`;
  subscriber = connect(url, { clientId: 'watcher' });
  subscriber.on('message', (_topic, payload, packet) => {
    received.push({ payload: JSON.parse(payload.toString()), qos: packet.qos, at: Date.now() });
  });
  await subscriber.subscribeAsync(`devices/${DEVICE.deviceId}/frames`, { qos: 1 });
});

afterEach(async () => {
  await subscriber.endAsync(true);
  await new Promise<void>((resolve) => broker.close(() => resolve()));
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const start = (route: StoredRoute, extra: Partial<DeviceOptions> = {}) =>
  startDevice({ mqttUrl: url, ...DEVICE, route, vin: VIN, speed: 200, seed: 1, runId: 'run', ...extra });

const framesOf = (list: Received[]) => list.flatMap((r) => (Array.isArray(r.payload) ? r.payload : [r.payload]));

/** Waits (≤ 2 s) until the subscriber has seen `n` distinct frames; deliveries trail the device's PUBACKs. */
async function receivedCount(n: number): Promise<void> {
  const distinct = () => new Set(framesOf(received).map((f) => f.id)).size;
  for (let i = 0; i < 200 && distinct() < n; i++) await new Promise((r) => setTimeout(r, 10));
}

describe('startDevice', () => {
  it('publishes every frame in order at QoS 1, startup first and shutdown last, then reports a summary', async () => {
    const progress: number[] = [];
    const device = start(backHome, { onProgress: (p) => progress.push(p.framesSent) });
    const summary = await device.done;
    await receivedCount(summary.framesSent);
    const frames = framesOf(received);
    expect(frames.length).toBe(summary.framesSent);
    expect(frames.map((f) => f.id)).toEqual(frames.map((_, i) => `run-${i}`));
    expect(frames[0]).toMatchObject({ kind: 'startup', vin: VIN });
    expect(frames.at(-1)!.kind).toBe('shutdown');
    expect(brokerQos.length).toBe(frames.length);
    expect(brokerQos.every((q) => q === 1)).toBe(true);
    expect(received.every((r) => r.qos === 1)).toBe(true);
    expect(summary.stopped).toBe(false);
    expect(summary.distance).toBeGreaterThan(0.99 * backHome.distanceByGPS);
    expect(Math.abs(summary.duration / backHome.duration - 1)).toBeLessThan(0.05);
    // 87 s at speed 200 is ~0.43 s of wall-clock time
    expect(summary.endedAt.getTime() - summary.startedAt.getTime()).toBeLessThan(5000);
    expect(progress.at(-1)).toBe(summary.framesSent);
    expect(device.progress()).toMatchObject({ framesSent: summary.framesSent, framesTotal: summary.framesSent, lastSpeed: 0 });
  });

  it('without a clock, stamps a compressed drive into the past: no ts after its arrival, ts spacing = drive time', async () => {
    const summary = await start(backHome).done;
    await receivedCount(summary.framesSent);
    for (const r of received) expect((r.payload as GatewayFrame).ts).toBeLessThanOrEqual(r.at);
    const frames = framesOf(received);
    expect(frames.at(-1)!.ts - frames[0].ts).toBe(summary.duration);
    expect(Math.abs(frames.at(-1)!.ts - summary.endedAt.getTime())).toBeLessThan(1000);
  });

  it("stamps from the dummy's clock when given one", async () => {
    const startTs = Date.now() + 3_600_000;
    const summary = await start(backHome, { startTs }).done;
    await receivedCount(summary.framesSent);
    const frames = framesOf(received);
    expect(frames[0].ts).toBe(startTs);
    expect(summary.lastTs).toBe(startTs + summary.duration);
  });

  it('gps-gap frames arrive late as one JSON array; duplicates arrive twice with the same id', async () => {
    const summary = await start(backHome, { scenarios: ['gps-gap', 'duplicates'] }).done;
    const arrays = () => received.filter((r) => Array.isArray(r.payload));
    await receivedCount(summary.framesSent);
    expect(arrays()).toHaveLength(1);
    const gap = arrays()[0].payload as GatewayFrame[];
    expect(gap.length).toBeGreaterThan(10);
    const ids = framesOf(received).map((f) => f.id);
    const dupes = ids.filter((id, i) => ids.indexOf(id) !== i);
    expect(dupes.length).toBeGreaterThanOrEqual(2);
    expect(new Set(ids).size).toBe(summary.framesSent);
    // The array comes right before the first frame after the gap.
    const at = received.indexOf(arrays()[0]);
    const next = received[at + 1].payload as GatewayFrame;
    expect(Number(next.id.split('-')[1])).toBe(Number(gap.at(-1)!.id.split('-')[1]) + 1);
  });

  it('stop() ends early with a shutdown frame', async () => {
    const device = start(downtown, { speed: 20 }); // ~25 s of wall-clock time
    await receivedCount(5);
    const summary = await device.stop();
    await receivedCount(summary.framesSent);
    const frames = framesOf(received);
    expect(summary.stopped).toBe(true);
    expect(frames.at(-1)!.kind).toBe('shutdown');
    expect(frames.at(-1)!.location.speed).toBe(0);
    expect(frames.length).toBe(summary.framesSent);
    expect(summary.framesSent).toBeLessThan(100);
    expect(frames.at(-1)!.ts).toBeGreaterThanOrEqual(frames.at(-2)!.ts);
  });

  it('reconnects after the broker drops it and still delivers every frame', async () => {
    const device = start(downtown, { speed: 200, reconnectPeriodMs: 50 }); // ~2.5 s
    await receivedCount(50);
    deviceClients[0].close();
    const summary = await device.done;
    await receivedCount(summary.framesSent);
    expect(deviceClients.length).toBeGreaterThanOrEqual(2);
    const ids = new Set(framesOf(received).map((f) => f.id));
    expect(ids.size).toBe(summary.framesSent);
    expect(summary.framesSent).toBe(device.progress().framesTotal);
  });

  it('stop() before the broker answers ends without sending anything', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const device = start(backHome, { mqttUrl: `mqtt://127.0.0.1:${port}`, reconnectPeriodMs: 50 });
    await new Promise((r) => setTimeout(r, 200));
    const summary = await device.stop();
    expect(summary).toMatchObject({ framesSent: 0, distance: 0, stopped: true });
  });

  it('refuses a speed below 1', () => {
    expect(() => start(backHome, { speed: 0.5 })).toThrow(/speed must be a number >= 1/);
  });

  it('fails the run when the broker refuses its credentials', async () => {
    const device = start(backHome, { secret: 'wrong' });
    await expect(device.done).rejects.toThrow(/MQTT connection refused/);
    expect(received).toHaveLength(0);
  });
});
