// A client declaring a 256 MB CONNECT is not read to the end (it would cost the process gigabytes), and a socket
// that never sends CONNECT is not kept waiting. The limits apply before authentication, to every packet.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { connectedDevice, goodFrame, metric, rawSocket, stillServing, within } from './mqtt.helpers.js';

const MAX_PACKET = 16 * 1024;
let g: TestGateway;
beforeAll(async () => {
  g = await startTestGateway({ maxPayloadBytes: 4096, mqttMaxPacketBytes: MAX_PACKET, mqttConnectTimeoutMs: 500 });
});
afterAll(async () => { await g?.close(); });

const cut = (reason: string) => metric(g, `drivewire_gateway_connections_refused_total{reason="${reason}"}`);
const MiB = 1024 * 1024;
// events.once would reject on the socket's ECONNRESET, which is the expected outcome here

describe('packet size and CONNECT timeout', () => {
  it('cuts a connection declaring a 256 MB CONNECT as soon as the header arrives, without reading the rest', async () => {
    const before = await cut('packet_too_large');
    const rss = process.memoryUsage().rss;
    const { socket, closed, isClosed } = await rawSocket(g.gw.ports.mqtt);
    const started = Date.now();
    // CONNECT (type 1), remaining length 268,435,455 (the largest MQTT can declare), then the "body".
    socket.write(Buffer.from([0x10, 0xff, 0xff, 0xff, 0x7f]));
    const chunk = Buffer.alloc(MiB, 0x41);
    let sent = 0;
    while (!isClosed() && sent < 64 * MiB) {
      sent += chunk.length;
      if (!socket.write(chunk)) await Promise.race([new Promise((r) => socket.once('drain', r)), closed]);
    }
    const closedAt = await within(closed, 'server closing the connection', 2000);
    expect(closedAt - started).toBeLessThan(2000);
    expect(sent).toBeLessThan(32 * MiB); // the server stopped reading long before the declared 256 MB
    expect(process.memoryUsage().rss - rss).toBeLessThan(48 * MiB);
    expect(await cut('packet_too_large')).toBe(before + 1);
    await stillServing(g);
  });

  it('closes a connection that sends no CONNECT, or only part of one, within the connect timeout', async () => {
    const before = await cut('connect_timeout');
    const silent = await rawSocket(g.gw.ports.mqtt);
    const slow = await rawSocket(g.gw.ports.mqtt);
    slow.socket.write(Buffer.from([0x10, 100, 0x00, 0x04])); // a CONNECT of 100 bytes, 2 of them sent
    const started = Date.now();
    const [a, b] = await within(Promise.all([silent.closed, slow.closed]), 'server closing idle connections', 3000);
    expect(Math.max(a, b) - started).toBeLessThan(2000);
    expect(await cut('connect_timeout')).toBe(before + 2);
    await stillServing(g);
  });

  it('cuts an authenticated device whose PUBLISH is over the packet limit; one over the payload limit only is a dead letter', async () => {
    const dev = await connectedDevice(g);
    const overPayload = JSON.stringify({ ts: new Date().toISOString(), data: { fuelType: 'x'.repeat(6000) } });
    await dev.publish(overPayload); // 6 KB: over the 4 KB payload limit, under the 16 KB packet limit
    expect((await dev.letters())[0].reason).toBe(`payload of ${overPayload.length} bytes exceeds the 4096-byte limit`);
    expect(dev.client.connected).toBe(true);
    const before = await cut('packet_too_large');
    dev.client.on('error', () => undefined); // ECONNRESET when the server cuts it
    const gone = new Promise<void>((r) => dev.client.once('close', () => r()));
    dev.client.publish(`devices/${dev.d.id}/frames`, Buffer.alloc(MiB, 0x20), { qos: 1 });
    await within(gone, 'server cutting the connection');
    expect(await cut('packet_too_large')).toBe(before + 1);
    const again = await within(g.connect(dev.d), 'reconnecting');
    await within(again.publishAsync(`devices/${dev.d.id}/frames`, goodFrame(5), { qos: 1 }), 'PUBACK');
    expect(await dev.storedRpm()).toEqual([5]);
  });
});
