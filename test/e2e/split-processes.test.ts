import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAsync } from 'mqtt';
import type { Platform } from '../../bin/platform.js';
import { readableDevice, startParts, streamSocket, type Parts } from './support/start-parts.js';

/**
 * `--only gateway` and `--only api` on one database (as two processes would run them): a frame
 * published to the gateway reaches a live-stream client of the API, which reads it from the database.
 */
let parts: Parts;
let gateway: Platform;
let api: Platform;

beforeAll(async () => {
  parts = await startParts(['gateway', 'api']);
  [gateway, api] = parts.platforms;
});
afterAll(async () => { await parts?.close(); });

describe('gateway and API in separate parts', () => {
  it('streams a message published to the gateway to a client of the API', async () => {
    expect(gateway.parts.map((p) => p.name)).toEqual(['gateway']);
    const { device, secret } = await readableDevice(api, 'split');

    const ws = streamSocket(api);
    const frames: any[] = [];
    ws.on('message', (m) => frames.push(JSON.parse(String(m))));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: device.id } }));
    const until = (ok: () => boolean) => new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 10_000;
      const check = () => (ok() ? resolve() : Date.now() > deadline ? reject(new Error('timed out')) : setTimeout(check, 20));
      check();
    });
    await until(() => frames.some((f) => f.type === 'sub' && f.payload?.ack === true));

    const client = await connectAsync(gateway.parts[0].urls!.mqtt.replace('localhost', '127.0.0.1'), { username: device.id, clientId: device.id, password: secret, reconnectPeriod: 0 });
    await client.publishAsync(`devices/${device.id}/frames`, JSON.stringify({ id: 'split-1', ts: Date.now(), pids: { '0D': '3C' } }), { qos: 1 });
    await client.endAsync();

    await until(() => frames.some((f) => f.type === 'pub'));
    const pub = frames.find((f) => f.type === 'pub');
    expect(pub.payload.data).toEqual({ vehicleSpeed: 60 });
    ws.close();
  });
});
