import { createServer, type AddressInfo, type Server } from 'node:net';
import { Aedes, type Client } from 'aedes';
import { connect, type MqttClient } from 'mqtt';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CommandMessage, CommandReply } from '../../lib/commands.js';
import { startDevice, type DeviceHandle, type DeviceOptions } from '../../simulator/device.js';
import { DTC_CODE, type GatewayFrame } from '../../simulator/frames.js';
import { loadStoredRoutes, type StoredRoute } from '../../simulator/route.js';

const DEVICE = { deviceId: 'dev-1', secret: 's3cret' };
const VIN = 'VV1AB2CD3EF456789';
const TOPICS = { frames: `devices/${DEVICE.deviceId}/frames`, commands: `devices/${DEVICE.deviceId}/commands`, responses: `devices/${DEVICE.deviceId}/responses` };
const routes = await loadStoredRoutes();
const downtown = routes.find((r) => r.name === 'DFW - Downtown Route 1')!; // 499 s drive

/** What the platform's client saw, in arrival order. */
type Seen = { kind: 'frame'; frame: GatewayFrame } | { kind: 'reply'; reply: CommandReply };

let broker: Aedes;
let server: Server;
let url: string;
let platform: MqttClient;
let seen: Seen[];
let deviceClients: Client[];
let subscribed: number;

beforeEach(async () => {
  seen = [];
  deviceClients = [];
  subscribed = 0;
  broker = await Aedes.createBroker();
  broker.on('client', (c) => { if (c.id === DEVICE.deviceId) deviceClients.push(c); });
  broker.on('subscribe', (subs, c) => { if (c?.id === DEVICE.deviceId && subs.some((s) => s.topic === TOPICS.commands && s.qos === 1)) subscribed += 1; });
  server = createServer(broker.handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `mqtt://127.0.0.1:${(server.address() as AddressInfo).port}`;
  platform = connect(url, { clientId: 'platform' });
  platform.on('message', (topic, payload) => {
    const body = JSON.parse(payload.toString());
    if (topic === TOPICS.responses) seen.push({ kind: 'reply', reply: body });
    else for (const frame of Array.isArray(body) ? body : [body]) seen.push({ kind: 'frame', frame });
  });
  await platform.subscribeAsync([TOPICS.frames, TOPICS.responses], { qos: 1 });
});

afterEach(async () => {
  await platform.endAsync(true);
  await new Promise<void>((resolve) => broker.close(() => resolve()));
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const start = (route: StoredRoute, extra: Partial<DeviceOptions> = {}) =>
  startDevice({ mqttUrl: url, ...DEVICE, route, vin: VIN, speed: 100, seed: 1, runId: 'run', reconnectPeriodMs: 50, ...extra });

const frames = () => seen.flatMap((s) => (s.kind === 'frame' ? [s.frame] : []));
const replies = () => seen.flatMap((s) => (s.kind === 'reply' ? [s.reply] : []));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls (≤ 5 s) until `check` holds. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

let nextId = 0;
const command = (type: string, payload: Record<string, unknown> | null = null, commandId = `cmd-${++nextId}`): CommandMessage => ({
  commandId, type, payload, expiresAt: new Date(Date.now() + 60_000).toISOString(),
});

/** Publishes a command as the platform does (QoS 1) and waits for the reply quoting its id. */
async function send(msg: CommandMessage | string): Promise<CommandReply> {
  const id = typeof msg === 'string' ? null : msg.commandId;
  const before = replies().filter((r) => r.commandId === id).length;
  await platform.publishAsync(TOPICS.commands, typeof msg === 'string' ? msg : JSON.stringify(msg), { qos: 1 });
  await until(() => replies().filter((r) => r.commandId === id).length > before, `a reply to ${id}`);
  return replies().filter((r) => r.commandId === id).at(-1)!;
}

async function started(extra: Partial<DeviceOptions> = {}): Promise<DeviceHandle> {
  const device = start(downtown, extra);
  await until(() => subscribed > 0 && frames().length > 0, 'the device to subscribe and send');
  return device;
}

describe('a simulated device answering commands', () => {
  it('answers each command type on its responses topic', async () => {
    const device = await started();
    expect(await send(command('ping'))).toEqual({ commandId: `cmd-${nextId}`, ok: true, result: {} });
    expect(await send(command('request-vin'))).toMatchObject({ ok: true, result: { vin: VIN } });
    expect(await send(command('request-dtcs'))).toMatchObject({ ok: true, result: { codes: [] } });
    expect(await send(command('clear-dtcs'))).toMatchObject({ ok: true, result: { cleared: [] } });
    expect(await send(command('set-interval', { seconds: 2 }))).toMatchObject({ ok: true, result: { seconds: 2 } });
    const echo = { a: 1, nested: { list: ['x', true, null] } };
    expect(await send(command('custom', echo))).toMatchObject({ ok: true, result: { echo } });
    const unknown = await send(command('self-destruct'));
    expect(unknown.ok).toBe(false);
    expect(unknown.error).toMatch(/^unknown command type "self-destruct"/);
    const bad = await send(command('set-interval', { seconds: 0 }));
    expect(bad).toMatchObject({ ok: false, error: 'command.payload.seconds must be an integer from 1 to 3600' });
    expect(bad).not.toHaveProperty('result');
    await device.stop();
  });

  it('ignores a payload that is not a command message', async () => {
    const device = await started();
    for (const junk of ['not json', '[1,2]', JSON.stringify({ type: 'ping' }), JSON.stringify({ commandId: 'x', type: 'ping', payload: 3, expiresAt: 'soon' })]) {
      await platform.publishAsync(TOPICS.commands, junk, { qos: 1 });
    }
    // A real command after the junk is answered: the junk left the device working and got no reply.
    await send(command('ping'));
    expect(replies().map((r) => r.commandId)).toEqual([`cmd-${nextId}`]);
    await device.stop();
  });

  it('set-interval 5: the telemetry frames after the reply are 5000 ms apart on its clock, ids still "<runId>-<seq>"', async () => {
    const device = await started(); // 499 s drive in ~5 s
    await until(() => frames().length >= 20, '20 frames');
    expect(await send(command('set-interval', { seconds: 5 }))).toMatchObject({ ok: true, result: { seconds: 5 } });
    const at = seen.findIndex((s) => s.kind === 'reply');
    const summary = await device.done;
    await until(() => frames().length === summary.framesSent, 'every frame');
    const before = seen.slice(0, at).flatMap((s) => (s.kind === 'frame' ? [s.frame] : []));
    const after = seen.slice(at).flatMap((s) => (s.kind === 'frame' ? [s.frame] : []));
    const telemetry = [before.at(-1)!, ...after.filter((f) => f.kind === 'telemetry')];
    expect(telemetry.length).toBeGreaterThan(50);
    const gaps = telemetry.slice(1).map((f, i) => f.ts - telemetry[i].ts);
    expect(new Set(gaps)).toEqual(new Set([5000]));
    // Before the command, one frame a second.
    expect(new Set(before.slice(1).map((f, i) => f.ts - before[i].ts))).toEqual(new Set([1000]));
    const all = frames();
    expect(all.at(-1)!.kind).toBe('shutdown');
    expect(all.map((f) => f.id)).toEqual(all.map((_, i) => `run-${i}`));
    expect(summary.framesSent).toBe(all.length);
    expect(device.progress()).toMatchObject({ framesSent: all.length, framesTotal: all.length });
    // The same drive: the frames keep the route's distance and duration (the last one is the arrival).
    expect(summary.distance).toBeGreaterThan(0.99 * downtown.distanceByGPS);
    expect(all.at(-1)!.ts - all[0].ts).toBe(summary.duration);
  });

  it('clear-dtcs during the dtc scenario: the reply lists P0300, the next frames report dtcs [] to the end', async () => {
    const device = await started({ scenarios: ['dtc'] });
    await until(() => frames().some((f) => f.dtcs?.includes(DTC_CODE)), 'a frame with the trouble code');
    expect(await send(command('request-dtcs'))).toMatchObject({ ok: true, result: { codes: [DTC_CODE] } });
    expect(await send(command('clear-dtcs'))).toMatchObject({ ok: true, result: { cleared: [DTC_CODE] } });
    const at = seen.findIndex((s) => s.kind === 'reply' && s.reply.commandId === `cmd-${nextId}`);
    expect(await send(command('request-dtcs'))).toMatchObject({ ok: true, result: { codes: [] } });
    const summary = await device.done;
    await until(() => frames().length === summary.framesSent, 'every frame');
    const after = seen.slice(at).flatMap((s) => (s.kind === 'frame' ? [s.frame] : []));
    expect(after.length).toBeGreaterThan(100);
    for (const f of after) expect(f.dtcs).toEqual([]);
  });

  it('reboot: replies, reconnects, resubscribes, and sends every frame of the run without reboot', async () => {
    const plain = start(downtown, { speed: 200 });
    const plainSummary = await plain.done;
    await until(() => frames().length === plainSummary.framesSent, 'every frame of the plain run');
    const plainFrames = frames();
    seen = [];
    subscribed = 0;
    deviceClients = [];

    const device = await started({ reconnectPeriodMs: 300 }); // 300 ms offline = 30 s of drive at speed 100
    await until(() => frames().length >= 30, '30 frames');
    expect(await send(command('reboot'))).toMatchObject({ ok: true, result: {} });
    await until(() => deviceClients.length === 2 && subscribed === 2, 'the reconnect and its subscription');
    expect(await send(command('ping'))).toMatchObject({ ok: true });
    const summary = await device.done;
    await until(() => frames().length === summary.framesSent, 'every frame');
    expect(frames()).toEqual(plainFrames.map((f) => ({ ...f, ts: expect.any(Number) })));
    expect(summary.framesSent).toBe(plainSummary.framesSent);
  });

  it('a redelivered commandId gets the same reply and is applied once', async () => {
    const device = await started({ speed: 50 });
    const first = await send(command('set-interval', { seconds: 3 }, 'same'));
    expect(first).toEqual({ commandId: 'same', ok: true, result: { seconds: 3 } });
    expect(await send(command('set-interval', { seconds: 3 }, 'same'))).toEqual(first);
    // The same id with another body is still the command already answered.
    expect(await send(command('set-interval', { seconds: 7 }, 'same'))).toEqual(first);
    const reboot = await send(command('reboot', null, 'boot'));
    await until(() => deviceClients.length === 2 && subscribed === 2, 'the reboot');
    expect(await send(command('reboot', null, 'boot'))).toEqual(reboot);
    await sleep(300);
    expect(deviceClients).toHaveLength(2);
    const at = seen.findIndex((s) => s.kind === 'reply');
    await device.stop();
    const telemetry = seen.slice(at).flatMap((s) => (s.kind === 'frame' && s.frame.kind === 'telemetry' ? [s.frame] : []));
    expect(telemetry.length).toBeGreaterThan(3);
    expect(new Set(telemetry.slice(1).map((f, i) => f.ts - telemetry[i].ts))).toEqual(new Set([3000]));
  });

  it('unresponsive: subscribes, sends its frames, and never answers nor applies a command', async () => {
    const device = await started({ scenarios: ['unresponsive'], speed: 200 });
    for (const c of [command('ping'), command('set-interval', { seconds: 10 }), command('reboot')]) {
      await platform.publishAsync(TOPICS.commands, JSON.stringify(c), { qos: 1 });
    }
    const summary = await device.done;
    await until(() => frames().length === summary.framesSent, 'every frame');
    await sleep(100);
    expect(replies()).toEqual([]);
    expect(deviceClients).toHaveLength(1);
    const all = frames();
    expect(new Set(all.slice(1, -1).map((f, i) => f.ts - all[i].ts))).toEqual(new Set([1000]));
  });
});
