import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storedMessages } from '../helpers/telemetry.factory.js';

let g: TestGateway;
let wsUrl: string;
beforeAll(async () => {
  g = await startTestGateway();
  await g.t.app.listen({ port: 0, host: '127.0.0.1' });
  wsUrl = `ws://127.0.0.1:${(g.t.app.server.address() as AddressInfo).port}/api/v1/messages`;
});
afterAll(async () => { await g?.close(); });

type Frame = { type: string; subject?: unknown; payload?: any };

/** Resolves with the first frame of the given type. */
const nextOfType = (ws: WebSocket, type: string) => new Promise<Frame>((resolve) => {
  const on = (raw: WebSocket.RawData) => {
    const frame = JSON.parse(raw.toString()) as Frame;
    if (frame.type === type) { ws.off('message', on); resolve(frame); }
  };
  ws.on('message', on);
});

describe('live stream', () => {
  it('pushes a frame published over MQTT to the client subscribed to its device, once committed', async () => {
    const app = await g.t.make.application();
    const device = await g.t.make.device(app.principal);
    const ws = new WebSocket(wsUrl, { headers: { authorization: app.auth } });
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    const subject = { type: 'device', id: device.id };
    const ack = nextOfType(ws, 'sub');
    ws.send(JSON.stringify({ type: 'sub', subject }));
    expect((await ack).payload).toEqual({ ack: true });

    const pub = nextOfType(ws, 'pub');
    const client = await g.connect(device);
    const ts = new Date(Date.now() - 1000);
    await client.publishAsync(`devices/${device.id}/frames`, JSON.stringify({ ts: ts.toISOString(), pids: { '0C': '0FA0' } }), { qos: 1 });
    const { payload } = await pub;
    const [stored] = await storedMessages(g.t.db.knex).where('device_id', device.id);
    expect(payload).toEqual({
      id: stored.id, timestamp: ts.toISOString(), data: { rpm: 1000 },
      links: { self: `http://localhost:3999/api/v1/messages/${stored.id}?deviceId=${device.id}` },
    });
    ws.close();
  });
});
