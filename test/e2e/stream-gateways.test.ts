import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAsync } from 'mqtt';
import type { Platform } from '../../bin/platform.js';
import { waitFor } from '../workers/receiver.js';
import { readableDevice, startParts, streamSocket, type Parts } from './support/start-parts.js';

/**
 * On PostgreSQL an API that runs a gateway in its own process (`--only api,gateway`) still streams what
 * another gateway process stores: the stream follows the database feed, each message once.
 * Two platforms on one database need PostgreSQL.
 */
describe.runIf(process.env.TEST_DATABASE_URL)('live stream with a gateway in the API process and another elsewhere', () => {
  let parts: Parts;
  let both: Platform;
  let other: Platform;

  beforeAll(async () => {
    parts = await startParts(['api,gateway', 'gateway']);
    [both, other] = parts.platforms;
  });
  afterAll(async () => { await parts?.close(); });

  it('streams messages of both gateways once', async () => {
    const { device, secret } = await readableDevice(both, 'two');
    const ws = streamSocket(both);
    const pubs: string[] = [];
    let acked = false;
    ws.on('message', (m) => {
      const f = JSON.parse(String(m));
      if (f.type === 'pub') pubs.push(f.payload.timestamp);
      if (f.type === 'sub' && f.payload?.ack) acked = true;
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'sub', subject: { type: 'device', id: device.id } }));
    await waitFor(() => acked, 'the subscription');
    const ts = Date.now() - 10_000;
    for (const [i, p] of [both, other].entries()) {
      const url = p.parts.find((x) => x.urls?.mqtt)!.urls!.mqtt;
      const client = await connectAsync(url, { username: device.id, clientId: device.id, password: secret, reconnectPeriod: 0 });
      await client.publishAsync(`devices/${device.id}/frames`, JSON.stringify({ id: `f${i}`, ts: ts + i, pids: { '0D': '3C' } }), { qos: 1 });
      await client.endAsync();
    }
    await waitFor(() => pubs.length >= 2, 'both messages');
    await new Promise((r) => setTimeout(r, 1000));
    expect(pubs).toEqual([new Date(ts).toISOString(), new Date(ts + 1).toISOString()]);
    ws.close();
  });
});
