import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { Redis } from 'ioredis';
import { connectAsync, type IClientOptions, type MqttClient } from 'mqtt';
import { createBus, type Bus } from '../../lib/bus.js';
import { loadConfig } from '../../lib/config.js';
import { silentLogger, type Logger } from '../../lib/logger.js';
import { startGateway, type Gateway } from '../../gateway/gateway.js';
import { buildTestApp, type TestApp } from './app.js';

export interface TestGateway {
  t: TestApp;
  gw: Gateway;
  bus: Bus;
  url: string;
  /** A connected MQTT.js client for the device, client id = device id (no reconnects, so a refused connection fails at once). */
  connect(device: { id: string; secret: string }, opts?: IClientOptions & { url?: string }): Promise<MqttClient>;
  close(): Promise<void>;
}

/**
 * A real gateway on port 0 over a fresh test database, next to the test API on the same database.
 * The API's live hooks are wired to the gateway's bus and health/metrics, as in `drivewire serve`.
 * `log` receives the gateway's log lines (default: none).
 */
export async function startTestGateway(overrides: Record<string, unknown> = {}, log: Logger = silentLogger): Promise<TestGateway> {
  const bus = createBus();
  // The API's hooks are made before the gateway exists: they answer empty until it has started.
  const live: { gw?: Gateway } = {};
  const t = await buildTestApp({ mqttPort: 0, mqttHost: '127.0.0.1', ...overrides }, {
    onMessage: (deviceId, fn) => bus.onMessage(deviceId, fn),
    health: async () => (await live.gw?.health()) ?? {},
    metrics: async () => (await live.gw?.metrics()) ?? '',
  });
  const gw = await startGateway({ config: t.config, db: t.db, repos: t.repos, log, bus });
  live.gw = gw;
  const url = `mqtt://127.0.0.1:${gw.ports.mqtt}`;
  const clients: MqttClient[] = [];
  return {
    t, gw, bus, url,
    async connect(device, opts = {}) {
      const { url: at, ...rest } = opts;
      const client = await connectAsync(at ?? url, {
        // The gateway accepts only the device's own id as client id (no device can take over another's session).
        username: device.id, password: device.secret, clientId: device.id,
        reconnectPeriod: 0, connectTimeout: 5000, ...rest,
      });
      clients.push(client);
      return client;
    },
    async close() {
      await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
      await gw.close();
      await t.close();
    },
  };
}

/**
 * Two gateways over one database sharing their MQTT state through Redis at `redisUrl`, as `serve --only gateway
 * --mqtt-redis-url` runs them: `a` a test gateway (with the API), `b` a second gateway on its database. They use a key and
 * channel prefix of their own, whose keys `close` deletes.
 */
export async function startGatewaysOnRedis(redisUrl: string): Promise<{ a: TestGateway; b: Gateway; close(): Promise<void> }> {
  const prefix = `drivewire-test-${randomUUID()}`;
  const url = new URL(redisUrl);
  url.searchParams.set('prefix', prefix);
  const mqttRedisUrl = url.toString();
  const a = await startTestGateway({ mqttRedisUrl });
  const config = loadConfig({ mqttPort: 0, mqttHost: '127.0.0.1', mqttRedisUrl, logLevel: 'silent' }, {});
  const b = await startGateway({ config, db: a.t.db, repos: a.t.repos, log: silentLogger, bus: createBus() });
  return {
    a, b,
    async close() {
      await b.close();
      await a.close();
      await deleteRedisPrefix(redisUrl, prefix);
    },
  };
}

/** Deletes the keys under `prefix` (a test's own `?prefix=` of --mqtt-redis-url) from the Redis at `redisUrl`. */
export async function deleteRedisPrefix(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl);
  for await (const keys of redis.scanStream({ match: `${prefix}:*`, count: 1000 })) {
    if ((keys as string[]).length) await redis.del(...(keys as string[]));
  }
  await redis.quit();
}

/** startGatewaysOnRedis for a describe block: started before its tests, closed after them; read `a` and `b` in tests. */
export function gatewaysOnRedis(redisUrl: string): { readonly a: TestGateway; readonly b: Gateway } {
  let both: Awaited<ReturnType<typeof startGatewaysOnRedis>> | undefined;
  beforeAll(async () => { both = await startGatewaysOnRedis(redisUrl); });
  afterAll(async () => { await both?.close(); });
  return { get a() { return both!.a; }, get b() { return both!.b; } };
}

/** Resolves when the condition holds, polling every 20 ms (for effects with no acknowledgement, like QoS 0). */
export async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 5000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}
