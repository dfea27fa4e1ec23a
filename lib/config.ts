import path from 'node:path';
import { SERVICE_KINDS, type ServiceKind } from './services.js';

/** One typed configuration; precedence flag > environment > default; all problems reported at once. */
export interface Config {
  only: 'all' | 'api' | 'gateway' | 'workers';
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
  streamHealthMs: number;
  /** MQTT URL the run scheduler connects dummies to; null = the in-process gateway's (issue 4). */
  simulatorMqttUrl: string | null;
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
}

/**
 * Room above DRIVEWIRE_MAX_PAYLOAD_BYTES in the default packet limit: any topic (at most 65,535 bytes) fits
 * around a payload of the maximum size, and a payload somewhat over it is still read, refused as a dead
 * letter and acknowledged (so the device does not resend it forever) rather than cutting the connection.
 */
export const MQTT_PACKET_HEADROOM = 64 * 1024;

type Kind = 'string' | 'int' | 'number' | 'port' | 'bool' | 'url' | 'enum';
interface Field { key: keyof Config | `url.${ServiceKind}`; env: string; kind: Kind; def: unknown; values?: string[] }

const F = (key: Field['key'], env: string, kind: Kind, def: unknown, values?: string[]): Field =>
  ({ key, env: `DRIVEWIRE_${env}`, kind, def, values });

export const CONFIG_FIELDS: Field[] = [
  F('only', 'ONLY', 'enum', 'all', ['all', 'api', 'gateway', 'workers']),
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
  F('webhookConcurrency', 'WEBHOOK_CONCURRENCY', 'int', 16),
  F('webhookMaxAttempts', 'WEBHOOK_MAX_ATTEMPTS', 'int', 5),
  F('webhookBackoffMs', 'WEBHOOK_BACKOFF_MS', 'int', 1000),
  F('streamHealthMs', 'STREAM_HEALTH_MS', 'int', 15_000),
  F('simulatorMqttUrl', 'SIMULATOR_MQTT_URL', 'string', null),
  F('collisionImpactG', 'COLLISION_IMPACT_G', 'number', 2.5),
  F('collisionMinSpeedKmh', 'COLLISION_MIN_SPEED_KMH', 'number', 15),
  F('collisionMergeMs', 'COLLISION_MERGE_MS', 'int', 10_000),
  F('batteryRecentHours', 'BATTERY_RECENT_HOURS', 'int', 72),
  F('mqttMaxPacketBytes', 'MQTT_MAX_PACKET_BYTES', 'int', null),
  F('mqttConnectTimeoutMs', 'MQTT_CONNECT_TIMEOUT_MS', 'int', 10_000),
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
    case 'enum':
      if (!field.values!.includes(text)) problems.push(`${where}: "${text}" must be one of ${field.values!.join(', ')}`);
      return text;
    default:
      return text;
  }
}

/** flags: camelCase keys as commander gives them (`url.telemetry` for per-service URLs). */
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
  if (problems.length) throw new ConfigError(problems);
  config.mqttMaxPacketBytes ??= config.maxPayloadBytes + MQTT_PACKET_HEADROOM;
  config.dataDir = path.resolve(config.dataDir);
  return config;
}

/** The server's own origin for links when no --public-url is set. */
export function publicUrl(config: Config, port = config.httpPort): string {
  return config.publicUrl ?? `http://localhost:${port}`;
}
