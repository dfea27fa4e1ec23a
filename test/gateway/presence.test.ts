import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mqttPacket from 'mqtt-packet';
import { eventually, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Device presence through the real gateway and API, with real MQTT clients (docs/concepts/commands-and-presence.md):
 * a short grace period and heartbeat so that the tests wait little.
 */
const GRACE_MS = 1500;
const HEARTBEAT_MS = 150;
let g: TestGateway;
beforeAll(async () => { g = await startTestGateway({ presenceGraceMs: GRACE_MS, gatewayHeartbeatMs: HEARTBEAT_MS }); });
afterAll(async () => { await g?.close(); });

async function setup() {
  const app = await g.t.make.application();
  const d = await g.t.make.device(app.principal);
  const status = async () => (await g.t.get(`/api/v1/devices/${d.id}`, app.auth)).json().device.status;
  const events = async () => ((await g.t.get(`/api/v1/devices/${d.id}/events?type=device-*`, app.auth)).json().events as
    { eventType: string; timestamp: string; object: { type: string; id: string } }[]).reverse();
  return { app, d, status, events };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('presence', () => {
  it('is offline and never seen before the first connection; online with device-online once connected', async () => {
    const { d, status, events } = await setup();
    expect(await status()).toEqual({ online: false, lastSeenAt: null, lastConnectedAt: null });
    const before = Date.now();
    await g.connect(d);
    const s = await eventually(status, (x) => x.online);
    expect(s.online).toBe(true);
    expect(Date.parse(s.lastConnectedAt)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(s.lastSeenAt)).toBeGreaterThanOrEqual(Date.parse(s.lastConnectedAt));
    const e = await eventually(events, (x) => x.length === 1);
    expect(e).toMatchObject([{ eventType: 'device-online', object: { type: 'device', id: d.id } }]);
  });

  it('stays online through a reconnect within the grace period: no event', async () => {
    const { d, status, events } = await setup();
    const first = await g.connect(d);
    await eventually(events, (x) => x.length === 1);
    await first.endAsync();
    await sleep(GRACE_MS / 3);
    await g.connect(d);
    await sleep(GRACE_MS + 4 * HEARTBEAT_MS);
    expect((await status()).online).toBe(true);
    expect((await events()).map((e) => e.eventType)).toEqual(['device-online']);
  });

  it('goes offline once after the grace period, stamped when the connection closed, and online again on reconnect', async () => {
    const { d, status, events } = await setup();
    const client = await g.connect(d);
    await eventually(events, (x) => x.length === 1);
    const closedAt = Date.now();
    await client.endAsync();
    const off = await eventually(events, (x) => x.length === 2, GRACE_MS + 10 * HEARTBEAT_MS);
    expect(off.map((e) => e.eventType)).toEqual(['device-online', 'device-offline']);
    expect(Math.abs(Date.parse(off[1].timestamp) - closedAt)).toBeLessThan(1000); // when it closed, not once the grace period ran out
    expect((await status()).online).toBe(false);
    await sleep(4 * HEARTBEAT_MS);
    expect(await events()).toHaveLength(2);
    await g.connect(d);
    const on = await eventually(events, (x) => x.length === 3);
    expect(on.map((e) => e.eventType)).toEqual(['device-online', 'device-offline', 'device-online']);
  });

  it('goes offline when its keep-alive expires (a connection that stops sending anything)', async () => {
    const { d, events, status } = await setup();
    // A raw connection: CONNECT with a 1 s keep-alive, then silence (no PINGREQ); the broker closes it at 1.5 s.
    const socket = net.connect(g.gw.ports.mqtt, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((r) => socket.once('connect', r));
    socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: d.id, keepalive: 1, username: d.id, password: Buffer.from(d.secret) }));
    await eventually(events, (x) => x.length === 1);
    const off = await eventually(events, (x) => x.length === 2, 1500 + GRACE_MS + 20 * HEARTBEAT_MS);
    expect(off[1].eventType).toBe('device-offline');
    expect((await status()).online).toBe(false);
    socket.destroy();
  });

  it('moves lastSeenAt with keep-alives', async () => {
    const { d, status } = await setup();
    await g.connect(d, { keepalive: 1 });
    const first = await eventually(status, (x) => x.online);
    const later = await eventually(status, (x) => Date.parse(x.lastSeenAt) > Date.parse(first.lastSeenAt) + 500, 4000);
    expect(Date.parse(later.lastSeenAt)).toBeGreaterThan(Date.parse(first.lastSeenAt) + 500);
    expect(later.lastConnectedAt).toBe(first.lastConnectedAt);
  });

  it("takes a gateway that stopped heartbeating for lost: its devices go offline as of its last heartbeat", async () => {
    const { d, status, events } = await setup();
    const lost = randomUUID();
    const heartbeat = new Date(Date.now() - 60_000);
    await g.t.db.knex('gateways').insert({ id: lost, started_at: heartbeat, heartbeat_at: heartbeat });
    await g.t.db.knex('device_presence').insert({
      device_id: d.id, online: true, gateway_id: lost, connection_id: randomUUID(), last_seen_at: heartbeat, last_connected_at: heartbeat,
    });
    const off = await eventually(events, (x) => x.length === 1, 20 * HEARTBEAT_MS);
    expect(off[0]).toMatchObject({ eventType: 'device-offline', timestamp: heartbeat.toISOString() });
    expect((await status()).online).toBe(false);
    expect(await g.t.db.knex('gateways').where({ id: lost }).first()).toBeUndefined();
  });

  it('lists devices with their status', async () => {
    const { app, d } = await setup();
    await g.connect(d);
    const list = await eventually(async () => (await g.t.get('/api/v1/devices', app.auth)).json().devices as { id: string; status: { online: boolean } }[],
      (x) => x.some((y) => y.id === d.id && y.status.online));
    expect(list.find((x) => x.id === d.id)!.status.online).toBe(true);
  });
});
