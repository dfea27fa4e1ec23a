import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createBus } from '../../lib/bus.js';
import { buildTestApp, basic, type TestApp } from '../helpers/app.js';
import { insertMessage } from '../helpers/telemetry.factory.js';
import { boundedWorkInFlight } from '../../db/acquire-limit.js';

type Frame = { type: string; subject?: unknown; payload?: any };

const HEALTH_MS = 150;
const bus = createBus();
/** Subscriptions the stream holds on the bus right now (to check they are released). */
let active = 0;
let t: TestApp;
let wsUrl: string;
const open: WebSocket[] = [];

beforeAll(async () => {
  t = await buildTestApp({ streamHealthMs: HEALTH_MS }, {
    onMessage: (deviceId, fn) => {
      active++;
      const off = bus.onMessage(deviceId, fn);
      return () => { active--; off(); };
    },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  wsUrl = `ws://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/v1/messages`;
});
afterEach(() => { for (const ws of open.splice(0)) ws.close(); });
afterAll(async () => { await t?.close(); });

/** A connected client whose frames are queued; `next` waits for the next frame that is not a heartbeat. */
async function connect(auth: string) {
  const ws = new WebSocket(wsUrl, { headers: { authorization: auth } });
  open.push(ws);
  const frames: Frame[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (raw) => { frames.push(JSON.parse(raw.toString())); waiters.splice(0).forEach((w) => w()); });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  async function next(accept: (f: Frame) => boolean = (f) => f.type !== 'health', timeoutMs = 5000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = frames.findIndex(accept);
      if (i >= 0) return frames.splice(i, 1)[0];
      if (Date.now() > deadline) throw new Error(`no frame arrived; queued: ${JSON.stringify(frames)}`);
      await new Promise<void>((r) => { waiters.push(r); setTimeout(r, 50); });
    }
  }
  const send = (frame: unknown) => ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  return { ws, next, send, dropHealth: () => { for (let i = frames.length - 1; i >= 0; i--) if (frames[i].type === 'health') frames.splice(i, 1); } };
}

async function readableDevice() {
  const app = await t.make.application();
  const device = await t.make.device(app.principal);
  return { app, device, subject: { type: 'device', id: device.id } };
}

async function publish(deviceId: string, data: Record<string, unknown>, location?: [number, number]) {
  const m = await insertMessage(t.db.knex, { deviceId, ts: new Date(), data, location });
  bus.publishMessages([{ id: m.id, deviceId, timestamp: m.ts, data: m.data }]);
  return m;
}

const until = async (cond: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 100 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 20));
  expect(await cond()).toBe(true);
};

describe('live stream WebSocket /api/v1/messages', () => {
  it('acknowledges a subscription and pushes each new message of the device as the REST API shows it', async () => {
    const { app, device, subject } = await readableDevice();
    const c = await connect(app.auth);
    c.send({ type: 'sub', subject });
    expect(await c.next()).toEqual({ type: 'sub', subject, payload: { ack: true } });
    const m = await publish(device.id, { rpm: 1500, vehicleSpeed: 42 }, [-96.79, 32.78]);
    const pub = await c.next();
    const rest = (await t.app.inject({ url: `/api/v1/messages/${m.id}`, headers: { authorization: app.auth } })).json();
    expect(pub).toEqual({ type: 'pub', subject, payload: rest.message });
    expect(pub.payload.data).toEqual({ rpm: 1500, vehicleSpeed: 42, location: { type: 'Point', coordinates: [-96.79, 32.78] } });
  });

  it('pushes only subscribed devices, and stops after unsub', async () => {
    const one = await readableDevice();
    const two = await t.make.device(one.app.principal);
    const subjectTwo = { type: 'device', id: two.id };
    const c = await connect(one.app.auth);
    c.send({ type: 'sub', subject: one.subject });
    c.send({ type: 'sub', subject: subjectTwo });
    expect((await c.next()).payload).toEqual({ ack: true });
    expect((await c.next()).payload).toEqual({ ack: true });
    c.send({ type: 'unsub', subject: one.subject });
    expect(await c.next()).toEqual({ type: 'unsub', subject: one.subject, payload: { ack: true } });
    await publish(one.device.id, { rpm: 1 });
    const m2 = await publish(two.id, { rpm: 2 });
    const pub = await c.next();
    expect([pub.subject, pub.payload.id]).toEqual([subjectTwo, m2.id]);
  });

  it("refuses a device of another application with ack false and a 404, and pushes none of its messages", async () => {
    const mine = await readableDevice();
    const theirs = await readableDevice();
    const c = await connect(mine.app.auth);
    c.send({ type: 'sub', subject: theirs.subject });
    expect(await c.next()).toEqual({
      type: 'sub', subject: theirs.subject,
      payload: { ack: false, error: { statusCode: 404, error: 'Not Found', message: 'Not found' } },
    });
    c.send({ type: 'sub', subject: mine.subject });
    expect((await c.next()).payload).toEqual({ ack: true });
    await publish(theirs.device.id, { rpm: 3 });
    const m = await publish(mine.device.id, { rpm: 4 });
    expect((await c.next()).payload.id).toBe(m.id);
  });

  it('answers a malformed subject with ack false and a 400', async () => {
    const { app } = await readableDevice();
    const c = await connect(app.auth);
    c.send({ type: 'sub', subject: { type: 'vehicle', id: crypto.randomUUID() } });
    expect((await c.next()).payload).toEqual({
      ack: false, error: { statusCode: 400, error: 'Bad Request', message: 'subject.type must be "device", got "vehicle"' },
    });
    c.send({ type: 'sub', subject: { type: 'device', id: 'abc' } });
    expect((await c.next()).payload.error.message).toBe('subject.id must be a device id (UUID)');
  });

  it('answers malformed JSON and unknown frame types with an error frame and keeps the connection open', async () => {
    const { app, subject } = await readableDevice();
    const c = await connect(app.auth);
    c.send('{not json');
    const bad = await c.next();
    expect(bad.type).toBe('error');
    expect(bad.payload).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(bad.payload.message).toMatch(/^Malformed JSON frame: /);
    c.send({ type: 'publish' });
    expect(await c.next()).toEqual({
      type: 'error', payload: { statusCode: 400, error: 'Bad Request', message: 'Unknown frame type "publish": expected sub or unsub' },
    });
    c.send([1, 2]);
    expect((await c.next()).payload.message).toBe('A frame must be a JSON object with a "type" (sub or unsub)');
    c.send({ type: 'sub', subject });
    expect((await c.next()).payload).toEqual({ ack: true });
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('sends health frames every streamHealthMs', async () => {
    const { app, subject } = await readableDevice();
    const c = await connect(app.auth);
    c.send({ type: 'sub', subject });
    await c.next();
    c.dropHealth();
    const started = Date.now();
    const first = await c.next((f) => f.type === 'health');
    const second = await c.next((f) => f.type === 'health');
    expect(Date.now() - started).toBeGreaterThanOrEqual(HEALTH_MS);
    expect(first.payload.subscriptions).toBe(1);
    expect(Date.parse(second.payload.timestamp) - Date.parse(first.payload.timestamp)).toBeGreaterThanOrEqual(HEALTH_MS - 20);
  });

  it('releases its bus subscriptions when the client disconnects', async () => {
    await until(() => active === 0); // connections of earlier tests are closed by now
    const { app, subject } = await readableDevice();
    const c = await connect(app.auth);
    c.send({ type: 'sub', subject });
    c.send({ type: 'sub', subject });
    await c.next();
    await c.next();
    expect(active).toBe(1);
    c.ws.close();
    await until(() => active === 0);
  });

  it('ends the upgrade request’s connection bound once the stream is open (db/acquire-limit.ts boundedWork)', async () => {
    const { app } = await readableDevice();
    const c = await connect(app.auth);
    // the stream is open and no request is in flight: the bound's async context is off
    await until(() => boundedWorkInFlight() === 0);
    c.ws.close();
  });

  it('refuses bad or missing credentials with 401 before upgrading', async () => {
    const { app } = await readableDevice();
    for (const headers of [{ authorization: basic(app.id, 'wrong-secret') }, {}]) {
      const ws = new WebSocket(wsUrl, { headers });
      ws.on('error', () => {}); // terminate() during the handshake reports an error we expect
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        ws.once('open', () => reject(new Error('upgraded with bad credentials')));
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (d: Buffer) => { body += d; });
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
      });
      ws.terminate();
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.body)).toEqual({ statusCode: 401, error: 'Unauthorized', message: 'Missing or invalid credentials' });
    }
  });

  it('answers an upgrade to a path that has no route with 404 and closes the socket', async () => {
    const { app } = await readableDevice();
    const ws = new WebSocket(wsUrl.replace('/api/v1/messages', '/api/v1/no-such-stream'), { headers: { authorization: app.auth } });
    ws.on('error', () => {});
    const status = await new Promise<number>((resolve, reject) => {
      ws.once('open', () => reject(new Error('upgraded an unknown path')));
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        res.socket.once('close', () => resolve(res.statusCode!)); // closed by the server, not by us
      });
    });
    expect(status).toBe(404);
  });

  it('records the connection as one transaction of the telemetry service', async () => {
    const { app, subject } = await readableDevice();
    const c = await connect(app.auth);
    c.send({ type: 'sub', subject });
    await c.next();
    const list = async () => (await t.app.inject({ url: '/api/v1/transactions', headers: { authorization: app.auth } })).json();
    await until(async () => (await list()).transactions.some((x: { path: string }) => x.path === '/api/v1/messages'));
    const streamCalls = (await list()).transactions.filter((x: { path: string }) => x.path === '/api/v1/messages');
    expect(streamCalls).toHaveLength(1);
    expect(streamCalls[0]).toMatchObject({ statusCode: 101, method: 'GET', service: 'drivewire-telemetry-service' });
  });

  it('answers a plain HTTP GET with 426', async () => {
    const { app } = await readableDevice();
    const res = await t.app.inject({ url: '/api/v1/messages', headers: { authorization: app.auth } });
    expect(res.statusCode).toBe(426);
    expect(res.headers.upgrade).toBe('websocket');
    expect(res.json()).toEqual({
      statusCode: 426, error: 'Upgrade Required',
      message: 'This is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket)',
    });
  });
});
