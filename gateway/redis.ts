// Shared MQTT state for several gateway processes (docs/operations/scale-out.md): Aedes routes publishes through
// mqemitter-redis (pub/sub) and keeps sessions, subscriptions and retained messages in aedes-persistence-redis.
import { Redis } from 'ioredis';
import mqemitterRedis from 'mqemitter-redis';
import aedesPersistenceRedis, { type RedisPersistence } from 'aedes-persistence-redis';
import { ConfigError } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';

/** Redis could not be reached at start-up; the message names the URL and the flag. */
export class RedisUnavailableError extends Error {}

export interface RedisState {
  /** Aedes' `mq` and `persistence` creation options. */
  mq: mqemitterRedis.MQEmitterRedis;
  persistence: RedisPersistence;
  up(): boolean;
  /** After the broker has closed: ends the persistence's subscription and every connection. */
  close(): Promise<void>;
}

/** Keys are `<prefix>:…` and pub/sub channels `<prefix>/…`, so deployments (or test runs) can share one Redis. */
const DEFAULT_PREFIX = 'drivewire';

// The channel-prefixing variant is exported by mqemitter-redis but missing from its type declarations.
const { MQEmitterRedisPrefix } = mqemitterRedis as unknown as {
  MQEmitterRedisPrefix: new (prefix: string, opts: mqemitterRedis.MQEmitterOptions) => mqemitterRedis.MQEmitterRedis;
};

const redact = (url: string) => url.replace(/\/\/[^@/]*@/, '//***@');

/** ioredis rejects connect() with "Connection is closed."; the cause comes as an 'error' event. */
async function connect(conn: Redis, url: string): Promise<void> {
  let cause: Error | undefined;
  const capture = (err: Error) => { cause ??= err; };
  conn.on('error', capture);
  try {
    await conn.connect();
  } catch (err) {
    const reason = (cause ?? (err as Error)).message;
    throw new RedisUnavailableError(`Redis at ${redact(url)} cannot be reached (${reason}); check --mqtt-redis-url`);
  } finally {
    conn.off('error', capture);
  }
}

/** Connects to Redis (`?prefix=name` in the URL isolates keys and channels); unreachable → RedisUnavailableError. */
export async function connectRedis(url: string, log: Logger): Promise<RedisState> {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (!parsed || !/^rediss?:$/.test(parsed.protocol)) {
    throw new ConfigError([`--mqtt-redis-url / DRIVEWIRE_MQTT_REDIS_URL: "${redact(url)}" is not a redis:// or rediss:// URL`]);
  }
  const prefix = parsed.searchParams.get('prefix') || DEFAULT_PREFIX;
  parsed.searchParams.delete('prefix');
  const open = (extra: { keyPrefix?: string } = {}) => new Redis(parsed.toString(), { lazyConnect: true, ...extra });
  const sub = open();
  const pub = open();
  const db = open({ keyPrefix: `${prefix}:` });
  const conns = [sub, pub, db];
  try {
    await Promise.all(conns.map((c) => connect(c, url)));
  } catch (err) {
    for (const c of conns) c.disconnect();
    throw err;
  }
  const logError = (err: Error) => log.warn({ err }, 'Redis connection error (reconnecting)');
  db.on('error', logError);
  const mq = new MQEmitterRedisPrefix(`${prefix}/`, { subConn: sub, pubConn: pub });
  (mq as unknown as { state: NodeJS.EventEmitter }).state.on('error', logError);
  const persistence = aedesPersistenceRedis({ conn: db });
  return {
    mq, persistence,
    up: () => conns.every((c) => c.status === 'ready'),
    async close() {
      await new Promise<void>((resolve) => mq.close(() => resolve()));
      // destroy() fails when the broker never started (no subscription to end); the connection still closes.
      await persistence.destroy().catch(() => undefined);
      db.disconnect();
    },
  };
}
