import path from 'node:path';
import { SERVICE_KINDS, type ServiceKind } from './services.js';

/** One typed configuration; precedence flag > environment > default; all problems reported at once. */
export type PartName = 'api' | 'gateway' | 'workers';

export interface Config {
  /** The parts this process runs (`--only api,workers`; `all` = every part). */
  only: PartName[];
  host: string;
  httpPort: number;
  publicUrl: string | null;
  /** Per sub-service link base; null = the public URL. */
  serviceUrls: Record<ServiceKind, string | null>;
  servicePrefix: string;
  mqttHost: string;
  mqttPort: number;
  mqttWsPort: number | null;
  mqttTlsPort: number | null;
  mqttTlsCert: string | null;
  mqttTlsKey: string | null;
  /** Redis through which several gateway processes share one MQTT state; null = in-memory broker. */
  mqttRedisUrl: string | null;
  dataDir: string;
  databaseUrl: string | null;
  logLevel: string;
  ingestBatchSize: number;
  ingestBatchMs: number;
  maxPayloadBytes: number;
  allowPrivateWebhooks: boolean;
  webhookTimeoutMs: number;
  webhookConcurrency: number;
  webhookMaxAttempts: number;
  webhookBackoffMs: number;
  /** Calls in flight to one receiver's origin from one worker, at most: a slow or hanging receiver holds no more slots. */
  webhookEndpointConcurrency: number;
  /** Consecutive failed attempts after which a subscription is paused (with webhookPauseAfterMs); 0 = never paused. */
  webhookPauseFailures: number;
  /** ms: how long a subscription's attempts must have been failing, at least, before it is paused. */
  webhookPauseAfterMs: number;
  /** Subscriptions an application may have, at most; creating one more is answered 409. */
  maxSubscriptionsPerApplication: number;
  streamHealthMs: number;
  /** MQTT URL the run scheduler connects dummies to; null = the in-process gateway's (issue 4). */
  simulatorMqttUrl: string | null;
  /** MQTT URL a gateway announces to the other parts (issue 14); null = its own listener's. */
  mqttPublicUrl: string | null;
  /** g: an accelerometer sample at least this strong, while moving, is an impact (issue 12). */
  collisionImpactG: number;
  /** km/h: the speed above which an accelerometer impact counts as a collision. */
  collisionMinSpeedKmh: number;
  /** ms: impact samples closer than this belong to one collision. */
  collisionMergeMs: number;
  /** h: battery readings older than this give batteryStatus null. */
  batteryRecentHours: number;
  /**
   * Largest MQTT packet (declared remaining length, bytes) a connection may send, authenticated or not;
   * a larger one cuts the connection before it is read. Default: maxPayloadBytes + MQTT_PACKET_HEADROOM.
   */
  mqttMaxPacketBytes: number;
  /** A connection that sends no CONNECT within this time (ms) is closed. */
  mqttConnectTimeoutMs: number;
  /** ms an API request waits for a database connection before it is answered 503 with Retry-After (issue 10, item 4). */
  dbAcquireTimeoutMs: number;
  /** Largest HTTP request body (bytes); a larger one is answered 413. */
  httpBodyLimitBytes: number;
  /** ms: a reporting gap this long ends a trip; the sweep closes a silent device's trip after it (issue 11). */
  tripGapMs: number;
  /** ms: a trip without ignition frames ends after this long without motion. */
  tripStationaryMs: number;
  /** km/h: a sample at or above this speed is motion (starts a trip without ignition frames). */
  tripMotionKmh: number;
  /** ms between two sweeps for silent devices' open trips. */
  tripSweepMs: number;
  /** Derive trips at ingest (the trips stage); off only to measure its cost (`bench ingest --trips compare`). */
  trips: boolean;
  /** Map tiles of the web console (issue 15): a Leaflet URL template with {z}/{x}/{y} (and optional {s}). */
  tileUrl: string;
  /** Attribution shown under the console's map tiles (HTML allowed, as Leaflet takes it). */
  tileAttribution: string;
}

/**
 * Room above DRIVEWIRE_MAX_PAYLOAD_BYTES in the default packet limit: any topic (at most 65,535 bytes) fits
 * around a payload of the maximum size, and a payload somewhat over it is still read, refused as a dead
 * letter and acknowledged (so the device does not resend it forever) rather than cutting the connection.
 */
export const MQTT_PACKET_HEADROOM = 64 * 1024;

type Kind = 'string' | 'int' | 'number' | 'port' | 'bool' | 'url' | 'tiles' | 'enum' | 'parts';
interface Field { key: keyof Config | `url.${ServiceKind}`; env: string; kind: Kind; def: unknown; values?: string[] }

const F = (key: Field['key'], env: string, kind: Kind, def: unknown, values?: string[]): Field =>
  ({ key, env: `DRIVEWIRE_${env}`, kind, def, values });

export const CONFIG_FIELDS: Field[] = [
  F('only', 'ONLY', 'parts', 'all', ['all', 'api', 'gateway', 'workers']),
  F('host', 'HOST', 'string', '0.0.0.0'),
  F('httpPort', 'HTTP_PORT', 'port', 3000),
  F('publicUrl', 'PUBLIC_URL', 'url', null),
  ...SERVICE_KINDS.map((k) => F(`url.${k}`, `URL_${k.toUpperCase()}`, 'url', null)),
  F('servicePrefix', 'SERVICE_PREFIX', 'string', 'drivewire'),
  F('mqttHost', 'MQTT_HOST', 'string', '0.0.0.0'),
  F('mqttPort', 'MQTT_PORT', 'port', 1883),
  F('mqttWsPort', 'MQTT_WS_PORT', 'port', null),
  F('mqttTlsPort', 'MQTT_TLS_PORT', 'port', null),
  F('mqttTlsCert', 'MQTT_TLS_CERT', 'string', null),
  F('mqttTlsKey', 'MQTT_TLS_KEY', 'string', null),
  F('mqttRedisUrl', 'MQTT_REDIS_URL', 'string', null),
  F('dataDir', 'DATA_DIR', 'string', '.drivewire'),
  F('databaseUrl', 'DATABASE_URL', 'string', null),
  F('logLevel', 'LOG_LEVEL', 'enum', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  F('ingestBatchSize', 'INGEST_BATCH_SIZE', 'int', 500),
  F('ingestBatchMs', 'INGEST_BATCH_MS', 'int', 20),
  F('maxPayloadBytes', 'MAX_PAYLOAD_BYTES', 'int', 256 * 1024),
  F('allowPrivateWebhooks', 'ALLOW_PRIVATE_WEBHOOKS', 'bool', false),
  F('webhookTimeoutMs', 'WEBHOOK_TIMEOUT_MS', 'int', 10_000),
  // 64: a claim refills a quarter of the slots at once and a record statement takes every call finished meanwhile, so
  // more slots mean fewer round trips per webhook (each ~150 µs of CPU on a 2-core VM). Delivery alone, 10,402 queued
  // webhooks: 16 slots 10.0-12.9 s, 32 slots 6.7-8.7 s, 64 slots 6.7-8.3 s (~600 µs of worker CPU per webhook, against
  // 750-960 µs at 16).
  F('webhookConcurrency', 'WEBHOOK_CONCURRENCY', 'int', 64),
  F('webhookMaxAttempts', 'WEBHOOK_MAX_ATTEMPTS', 'int', 5),
  F('webhookBackoffMs', 'WEBHOOK_BACKOFF_MS', 'int', 1000),
  // A quarter of the slots: a receiver that never answers holds 16 of 64 for its timeout, the others keep 48.
  F('webhookEndpointConcurrency', 'WEBHOOK_ENDPOINT_CONCURRENCY', 'int', 16),
  F('webhookPauseFailures', 'WEBHOOK_PAUSE_FAILURES', 'int', 20),
  F('webhookPauseAfterMs', 'WEBHOOK_PAUSE_AFTER_MS', 'int', 10 * 60_000),
  F('maxSubscriptionsPerApplication', 'MAX_SUBSCRIPTIONS_PER_APPLICATION', 'int', 10_000),
  F('streamHealthMs', 'STREAM_HEALTH_MS', 'int', 15_000),
  F('simulatorMqttUrl', 'SIMULATOR_MQTT_URL', 'string', null),
  F('mqttPublicUrl', 'MQTT_PUBLIC_URL', 'string', null),
  F('collisionImpactG', 'COLLISION_IMPACT_G', 'number', 2.5),
  F('collisionMinSpeedKmh', 'COLLISION_MIN_SPEED_KMH', 'number', 15),
  F('collisionMergeMs', 'COLLISION_MERGE_MS', 'int', 10_000),
  F('batteryRecentHours', 'BATTERY_RECENT_HOURS', 'int', 72),
  F('mqttMaxPacketBytes', 'MQTT_MAX_PACKET_BYTES', 'int', null),
  F('mqttConnectTimeoutMs', 'MQTT_CONNECT_TIMEOUT_MS', 'int', 10_000),
  F('dbAcquireTimeoutMs', 'DB_ACQUIRE_TIMEOUT_MS', 'int', 5_000),
  F('httpBodyLimitBytes', 'HTTP_BODY_LIMIT_BYTES', 'int', 1024 * 1024),
  F('tripGapMs', 'TRIP_GAP_MS', 'int', 15 * 60_000),
  F('tripStationaryMs', 'TRIP_STATIONARY_MS', 'int', 180_000),
  F('tripMotionKmh', 'TRIP_MOTION_KMH', 'number', 5),
  F('tripSweepMs', 'TRIP_SWEEP_MS', 'int', 30_000),
  F('trips', 'TRIPS', 'bool', true),
  F('tileUrl', 'TILE_URL', 'tiles', 'https://tile.openstreetmap.org/{z}/{x}/{y}.png'),
  F('tileAttribution', 'TILE_ATTRIBUTION', 'string', '&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors'),
];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

function flagName(key: string): string {
  return '--' + key.replace('url.', 'url-').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function coerce(field: Field, raw: unknown, problems: string[]): unknown {
  if (field.kind === 'parts') return parts(field, raw === null || raw === undefined || raw === '' ? field.def : raw, problems);
  if (raw === null || raw === undefined || raw === '') return field.def;
  const where = `${flagName(field.key)} / ${field.env}`;
  const text = String(raw);
  switch (field.kind) {
    case 'int':
    case 'port': {
      const n = Number(text);
      const max = field.kind === 'port' ? 65535 : Number.MAX_SAFE_INTEGER;
      if (!Number.isInteger(n) || n < 0 || n > max) {
        problems.push(`${where}: "${text}" is not ${field.kind === 'port' ? 'a port (0-65535)' : 'a non-negative integer'}`);
      }
      return n;
    }
    case 'number': {
      const n = Number(text);
      if (!Number.isFinite(n) || n < 0) problems.push(`${where}: "${text}" is not a non-negative number`);
      return n;
    }
    case 'bool':
      if (typeof raw === 'boolean') return raw;
      if (/^(1|true|yes|on)$/i.test(text)) return true;
      if (/^(0|false|no|off)$/i.test(text)) return false;
      problems.push(`${where}: "${text}" is not a boolean`);
      return field.def;
    case 'url':
      try {
        const u = new URL(text);
        if (!/^https?:$/.test(u.protocol)) throw new Error('protocol');
        return text.replace(/\/+$/, '');
      } catch {
        problems.push(`${where}: "${text}" is not an http(s) URL`);
        return null;
      }
    case 'tiles':
      // A Leaflet template: an http(s) URL once its {s}/{z}/{x}/{y}/{r} placeholders are filled in.
      try {
        const u = new URL(text.replace(/\{[a-z]+\}/g, '0'));
        if (!/^https?:$/.test(u.protocol) || !['{z}', '{x}', '{y}'].every((p) => text.includes(p))) throw new Error('template');
        return text;
      } catch {
        problems.push(`${where}: "${text}" is not an http(s) tile URL template with {z}, {x} and {y}`);
        return field.def;
      }
    case 'enum':
      if (!field.values!.includes(text)) problems.push(`${where}: "${text}" must be one of ${field.values!.join(', ')}`);
      return text;
    default:
      return text;
  }
}

/** A comma-separated list of parts (`api,workers`); `all` stands for every part (issue 14). */
function parts(field: Field, raw: unknown, problems: string[]): PartName[] {
  const names = (Array.isArray(raw) ? raw.map(String) : String(raw).split(',')).map((s) => s.trim()).filter(Boolean);
  const out = new Set<PartName>();
  for (const name of names) {
    if (!field.values!.includes(name)) problems.push(`${flagName(field.key)} / ${field.env}: "${name}" must be one of ${field.values!.join(', ')}`);
    else if (name === 'all') for (const p of ['api', 'gateway', 'workers'] as const) out.add(p);
    else out.add(name as PartName);
  }
  return [...out];
}

/** flags: camelCase keys as commander gives them (`url.telemetry` for per-service URLs). */
/** Where the embedded PGlite keeps its cluster in a data directory (`--data-dir`). */
export const embeddedDbDir = (dataDir: string) => path.join(dataDir, 'pgdata');

export function loadConfig(flags: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = { serviceUrls: {} };
  for (const field of CONFIG_FIELDS) {
    const raw = flags[field.key] ?? env[field.env];
    const value = coerce(field, raw, problems);
    if (field.key.startsWith('url.')) (out.serviceUrls as Record<string, unknown>)[field.key.slice(4)] = value;
    else out[field.key] = value;
  }
  const config = out as unknown as Config;
  if (!config.databaseUrl && env.DATABASE_URL && flags.databaseUrl === undefined) config.databaseUrl = env.DATABASE_URL;
  if ((config.mqttTlsCert === null) !== (config.mqttTlsKey === null)) {
    problems.push('--mqtt-tls-cert and --mqtt-tls-key must be given together');
  }
  if (config.mqttConnectTimeoutMs === 0) problems.push('--mqtt-connect-timeout-ms / DRIVEWIRE_MQTT_CONNECT_TIMEOUT_MS: must be at least 1');
  if (config.dbAcquireTimeoutMs === 0) problems.push('--db-acquire-timeout-ms / DRIVEWIRE_DB_ACQUIRE_TIMEOUT_MS: must be at least 1');
  if (config.webhookEndpointConcurrency === 0) problems.push('--webhook-endpoint-concurrency / DRIVEWIRE_WEBHOOK_ENDPOINT_CONCURRENCY: must be at least 1');
  if (config.httpBodyLimitBytes === 0) problems.push('--http-body-limit-bytes / DRIVEWIRE_HTTP_BODY_LIMIT_BYTES: must be at least 1');
  if (problems.length) throw new ConfigError(problems);
  config.mqttMaxPacketBytes ??= config.maxPayloadBytes + MQTT_PACKET_HEADROOM;
  config.dataDir = path.resolve(config.dataDir);
  return config;
}

/** The server's own origin for links when no --public-url is set. */
export function publicUrl(config: Config, port = config.httpPort): string {
  return config.publicUrl ?? `http://localhost:${port}`;
}
