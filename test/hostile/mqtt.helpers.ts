// Shared by the hostile MQTT tests: a device with a live connection on a real test gateway, the refusal
// metrics, raw TCP sockets, and a bound on how long anything may take (no hang over 5 s).
import net from 'node:net';
import mqttPacket from 'mqtt-packet';
import { expect } from 'vitest';
import type { MqttClient } from 'mqtt';
import type { TestGateway } from '../helpers/gateway.js';
import { storedMessages } from '../helpers/telemetry.factory.js';
import { slotOf } from '../../db/message-data.sql.js';

/** Fails the test when `p` has not settled within `ms` (default 5 s: longer is a hang). */
export async function within<T>(p: Promise<T>, what: string, ms = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms); });
  try { return await Promise.race([p, late]); } finally { clearTimeout(timer); }
}

export const ts = () => new Date(Date.now() - 1000).toISOString();
export const goodFrame = (rpm: number) => JSON.stringify({ ts: ts(), data: { rpm } });

export interface HostileDevice {
  d: { id: string; secret: string };
  client: MqttClient;
  /** QoS 1 publish on the device's frames topic; resolves on PUBACK (i.e. after the commit). */
  publish(payload: string | Buffer): Promise<unknown>;
  /** The rpm of every stored frame of the device, oldest first. */
  storedRpm(): Promise<number[]>;
  letters(): Promise<{ frameIndex: number | null; reason: string; raw: string | undefined }[]>;
}

export async function connectedDevice(g: TestGateway): Promise<HostileDevice> {
  const app = await g.t.make.application();
  const d = await g.t.make.device(app.principal);
  const client = await within(g.connect(d), 'CONNECT');
  return {
    d, client,
    publish: (payload) => within(client.publishAsync(`devices/${d.id}/frames`, payload, { qos: 1 }), 'PUBACK'),
    // frames of one payload often share a millisecond: then in rpm order (nothing orders messages by arrival)
    storedRpm: async () => (await storedMessages(g.t.db.knex).where('device_id', d.id).orderBy('ts').orderByRaw(`num[${slotOf('rpm')}]`))
      .map((r) => r.data.rpm),
    letters: async () => (await g.t.repos.ingest.deadLetters(d.id)).reverse()
      .map((l) => ({ frameIndex: l.frameIndex, reason: l.reason, raw: l.raw?.toString('utf8') })),
  };
}

/** A metric's value in the gateway's /metrics text (0 when the series does not exist yet). */
export async function metric(g: TestGateway, series: string): Promise<number> {
  const line = (await g.gw.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** After an attack: the gateway still takes a new device's good frame and stores it. */
export async function stillServing(g: TestGateway): Promise<void> {
  const dev = await connectedDevice(g);
  await dev.publish(goodFrame(777));
  expect(await dev.storedRpm()).toEqual([777]);
}

/** A raw TCP connection to the gateway; `closed` resolves with the time the server closed it. */
export async function rawSocket(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined); // EPIPE/ECONNRESET once the server cuts the connection
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
  return { socket, closed, isClosed: () => socket.destroyed || socket.closed };
}

/** The CONNACK return code a connection attempt gets (MQTT.js rejects with it as `code`), or 'connected'. */
export const connackCode = (p: Promise<MqttClient>) =>
  p.then((c) => { c.end(true); return 'connected' as const; }, (err: { code?: number }) => err.code);

/**
 * A device speaking raw MQTT 3.1.1 packets (mqtt-packet generate/parse) on its own TCP connection: what MQTT.js
 * would never send (a DUP re-send before PUBREL, a SUBSCRIBE of thousands of filters). `next(cmd)` resolves with
 * the next packet of that kind the server sent, or rejects when the connection closes first.
 */
export async function rawMqtt(port: number) {
  const { socket, closed, isClosed } = await rawSocket(port);
  const parser = mqttPacket.parser({ protocolVersion: 4 });
  const received: mqttPacket.Packet[] = [];
  const waiting: { cmd: string; resolve: (p: mqttPacket.Packet) => void; reject: (e: Error) => void }[] = [];
  const deliver = () => {
    for (const w of [...waiting]) {
      const i = received.findIndex((p) => p.cmd === w.cmd);
      if (i < 0) continue;
      w.resolve(received.splice(i, 1)[0]);
      waiting.splice(waiting.indexOf(w), 1);
    }
  };
  parser.on('packet', (p) => { received.push(p); deliver(); });
  socket.on('data', (chunk) => parser.parse(chunk));
  void closed.then(() => { for (const w of waiting.splice(0)) w.reject(new Error(`connection closed before ${w.cmd}`)); });
  return {
    socket, closed, isClosed,
    send: (packet: Record<string, unknown>) => { socket.write(mqttPacket.generate(packet as unknown as mqttPacket.Packet)); },
    next: <T extends mqttPacket.Packet>(cmd: string) => within(new Promise<T>((resolve, reject) => {
      if (isClosed()) return reject(new Error(`connection closed before ${cmd}`));
      waiting.push({ cmd, resolve: resolve as (p: mqttPacket.Packet) => void, reject });
      deliver();
    }), cmd),
    /** CONNECT as the device; resolves with the CONNACK. */
    async connect(d: { id: string; secret: string }, clean = true) {
      socket.write(mqttPacket.generate({
        cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean, keepalive: 60, clientId: d.id, username: d.id, password: Buffer.from(d.secret),
      }));
      return this.next<mqttPacket.IConnackPacket>('connack');
    },
    end: () => { socket.destroy(); return closed; },
  };
}
