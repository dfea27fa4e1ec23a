// Two gateways over one database share their MQTT state through Redis. Runs only with TEST_REDIS_URL
// (e.g. redis://127.0.0.1:6379/7); each run uses its own key and channel prefix and deletes its keys.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import type { MqttClient } from 'mqtt';
import { loadConfig } from '../../lib/config.js';
import { createBus } from '../../lib/bus.js';
import { silentLogger } from '../../lib/logger.js';
import { startGateway } from '../../gateway/gateway.js';
import { RedisUnavailableError } from '../../gateway/redis.js';
import { gatewaysOnRedis } from '../helpers/gateway.js';
import { storedMessages } from '../helpers/telemetry.factory.js';

const redisUrl = process.env.TEST_REDIS_URL;

describe.runIf(redisUrl)('gateways sharing MQTT state through Redis', () => {
  const gws = gatewaysOnRedis(redisUrl!);

  const onB = () => ({ url: `mqtt://127.0.0.1:${gws.b.ports.mqtt}` });
  const command = (topic: string, payload: string, retain: boolean) => new Promise<void>((resolve, reject) => {
    gws.b.broker.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 1, retain, dup: false },
      (err) => (err ? reject(err) : resolve()));
  });
  const nextMessage = (client: MqttClient) => new Promise<{ topic: string; payload: string; retain: boolean }>((resolve) => {
    client.once('message', (topic, payload, packet) => resolve({ topic, payload: payload.toString(), retain: packet.retain }));
  });

  it('delivers a command published on gateway B to the device subscribed on gateway A', async () => {
    const d = await gws.a.t.make.device();
    const client = await gws.a.connect(d);
    await client.subscribeAsync(`devices/${d.id}/commands`, { qos: 1 });
    const received = nextMessage(client);
    await command(`devices/${d.id}/commands`, '{"do":"ping"}', false);
    expect(await received).toEqual({ topic: `devices/${d.id}/commands`, payload: '{"do":"ping"}', retain: false });
  });

  it('delivers a retained command published on gateway B to a device that subscribes later on gateway A', async () => {
    const d = await gws.a.t.make.device();
    await command(`devices/${d.id}/commands`, '{"do":"report"}', true);
    const client = await gws.a.connect(d);
    const received = nextMessage(client);
    await client.subscribeAsync(`devices/${d.id}/commands`, { qos: 1 });
    expect(await received).toEqual({ topic: `devices/${d.id}/commands`, payload: '{"do":"report"}', retain: true });
  });

  it('stores the frames a device publishes to either gateway', async () => {
    const d = await gws.a.t.make.device();
    const frame = (rpm: number) => JSON.stringify({ ts: new Date(Date.now() - 1000).toISOString(), data: { rpm } });
    await (await gws.a.connect(d)).publishAsync(`devices/${d.id}/frames`, frame(1000), { qos: 1 });
    await (await gws.a.connect(d, onB())).publishAsync(`devices/${d.id}/frames`, frame(2000), { qos: 1 });
    const rows = await storedMessages(gws.a.t.db.knex).where('device_id', d.id);
    expect(rows.map((r) => r.data.rpm).sort()).toEqual([1000, 2000]);
  });

  it('reports Redis in the health checks', async () => {
    const res = await gws.a.t.app.inject({ method: 'GET', url: '/health' });
    expect(res.json()).toEqual({ status: 'ok', checks: { database: true, broker: true, redis: true } });
    expect(await gws.b.health()).toEqual({ broker: true, redis: true });
  });

  it('stops start-up when Redis cannot be reached, naming the URL and the flag', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const config = loadConfig({ mqttPort: 0, mqttHost: '127.0.0.1', mqttRedisUrl: `redis://127.0.0.1:${port}/0`, logLevel: 'silent' }, {});
    const start = startGateway({ config, db: gws.a.t.db, repos: gws.a.t.repos, log: silentLogger, bus: createBus() });
    await expect(start).rejects.toThrow(RedisUnavailableError);
    await expect(start).rejects.toThrow(
      `Redis at redis://127.0.0.1:${port}/0 cannot be reached (connect ECONNREFUSED 127.0.0.1:${port}); check --mqtt-redis-url`);
  });
});
