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
  /**
   * ms a frame's ts may be ahead of the gateway's clock; a frame stamped further ahead is refused. Devices stamp frames
   * from GNSS or NTP time, to well under a second, and a frame is sent after it is captured, never before: 60 s leaves
   * room for an unsynchronised clock's drift of weeks and for the gateway's own. What it allows is also what it costs: a
   * frame stamped ahead is the device's newest until real time passes it, and the device's real frames meanwhile are late.
   */
  maxFutureSkewMs: number;
  /** frames/s a device may publish in the long run (gateway/rate-limit.ts); 0 = no limit. */
  deviceFramesPerSecond: number;
  /** frames a device may publish at once, above its rate (the bucket's depth). */
  deviceFramesBurst: number;
  /** payload bytes/s a device may publish in the long run; 0 = no limit. */
  deviceBytesPerSecond: number;
  /** payload bytes a device may publish at once. */
  deviceBytesBurst: number;
  /** payload bytes of a device's QoS 1/2 payloads that may wait for its rate limit (held in memory); one always may. */
  deviceWaitingBytes: number;
  allowPrivateWebhooks: boolean;
  webhookTimeoutMs: number;
  webhookConcurrency: number;
  webhookMaxAttempts: number;
  webhookBackoffMs: number;
  /** Calls in flight to one receiver's origin from one worker, at most: a slow or hanging receiver holds no more slots. */
  webhookEndpointConcurrency: number;
  /**
   * Calls in flight for one application's subscriptions from one worker, at most, whatever their endpoints: however many
   * origins its receivers have, one tenant's hanging receivers hold no more slots.
   */
  webhookApplicationConcurrency: number;
  /** Consecutive failed attempts after which a subscription is paused (with webhookPauseAfterMs); 0 = never paused. */
  webhookPauseFailures: number;
  /** ms: how long a subscription's attempts must have been failing, at least, before it is paused. */
  webhookPauseAfterMs: number;
  /** Subscriptions an application may have, at most; creating one more is answered 409. */
  maxSubscriptionsPerApplication: number;
  streamHealthMs: number;
  /** Live streams one application may hold open at once on this API process; one more is answered 429. */
  streamsPerApplication: number;
  /** bytes: a live stream with more unsent than this (a consumer not reading) is closed with 1013. */
  streamMaxBufferedBytes: number;
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
  /**
   * ms between two checks of every live MQTT session's credentials on a gateway: a session whose device's secret
   * changed without the gateway hearing of it closes within this time (signalled changes close it at once).
   */
  mqttCredentialsCheckMs: number;
  /** Filters one SUBSCRIBE may carry; a SUBSCRIBE of more closes the connection before it is handled. */
  mqttMaxSubscribeFilters: number;
  /** Longest PUBLISH topic or SUBSCRIBE filter (bytes of UTF-8); a longer one is refused, and topics are cut to it in logs and dead letters. */
  mqttMaxTopicBytes: number;
  /** ms: a gateway logs one line per client and reason in this window, then one with the count of the repeats. */
  mqttLogThrottleMs: number;
  /** ms an API request waits for a database connection before it is answered 503 with Retry-After (issue 10, item 4). */
  dbAcquireTimeoutMs: number;
  /** Largest HTTP request body (bytes); a larger one is answered 413. */
  httpBodyLimitBytes: number;
  /** ms within which a whole HTTP request (headers and body) must arrive; later, 408 and the socket closed. */
  httpRequestTimeoutMs: number;
  /** ms within which an HTTP request's headers must arrive (at most httpRequestTimeoutMs). */
  httpHeadersTimeoutMs: number;
  /** bytes/s: the least average rate of a request body once httpBodyGraceMs has passed; 0 = no minimum. */
  httpBodyMinBytesPerSec: number;
  /** ms a request body may take before its average rate must reach httpBodyMinBytesPerSec. */
  httpBodyGraceMs: number;
  /** Open HTTP connections (the live stream's included) one client address may hold; more are closed at once. 0 = no cap. */
  httpMaxConnectionsPerIp: number;
  /** ms: a reporting gap this long ends a trip; the sweep closes a silent device's trip after it (issue 11). */
  tripGapMs: number;
  /** ms: a trip without ignition frames ends after this long without motion. */
  tripStationaryMs: number;
  /** km/h: a sample at or above this speed is motion (starts a trip without ignition frames). */
  tripMotionKmh: number;
  /** ms between two sweeps for silent devices' open trips. */
  tripSweepMs: number;
  /**
   * Messages: how many stored messages a late frame may make the trips, collisions and trouble-code stages re-read;
   * past it, a trip is spliced or left as it was (db/trips/segment.ts RecomputeBounds), collisions and codes are
   * re-derived from the bound on only.
   */
  lateRecomputeMaxMessages: number;
  /** ms: nor from further back than this before the device's newest message. */
  lateRecomputeMaxAgeMs: number;
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
  F('maxFutureSkewMs', 'MAX_FUTURE_SKEW_MS', 'int', 60_000),
  // Per-device rate limit (frames/s and bytes/s, each a bucket with a burst; gateway/rate-limit.ts; a rate of 0 turns
  // that limit off). A dongle reports about 1 frame/s while driving (the simulator's default), a fast one 10/s, and after
  // a reconnect uploads what it kept offline in arrays: 500 frames/s is 50 times a fast dongle and uploads an hour of
  // 1 Hz backlog in ~7 s, and stays above the benches' closed-loop devices (~240 frames/s each), while one flooding
  // device cannot take the ingest from the others. The burst is 2 s of the rate: a much larger burst lets one device
  // fill the batches for long enough that other devices' PUBACKs wait behind it.
  // Bytes: 500 frames/s of ~2 KB (a frame of every PID); the burst 2 s of it, 8 payloads of the largest size (256 KiB).
  F('deviceFramesPerSecond', 'DEVICE_FRAMES_PER_SECOND', 'number', 500),
  F('deviceFramesBurst', 'DEVICE_FRAMES_BURST', 'int', 1000),
  F('deviceBytesPerSecond', 'DEVICE_BYTES_PER_SECOND', 'number', 1024 * 1024),
  F('deviceBytesBurst', 'DEVICE_BYTES_BURST', 'int', 2 * 1024 * 1024),
  // Waiting payloads are held in memory until taken: 1 MiB a device is four of the largest (256 KiB) and ~500 typical
  // frames, more than one connection's socket read holds; past it a device is reconnecting to pile them up.
  F('deviceWaitingBytes', 'DEVICE_WAITING_BYTES', 'int', 1024 * 1024),
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
  // Half the slots: one application whose receivers (on any number of origins) never answer holds 32 of 64 for their
  // timeout, the other applications keep 32; one application alone still has 32 calls at once, where delivery was
  // about as fast as with 64 (webhookConcurrency above: 6.7-8.7 s against 6.7-8.3 s for 10,402 webhooks).
  F('webhookApplicationConcurrency', 'WEBHOOK_APPLICATION_CONCURRENCY', 'int', 32),
  F('webhookPauseFailures', 'WEBHOOK_PAUSE_FAILURES', 'int', 20),
  F('webhookPauseAfterMs', 'WEBHOOK_PAUSE_AFTER_MS', 'int', 10 * 60_000),
  F('maxSubscriptionsPerApplication', 'MAX_SUBSCRIPTIONS_PER_APPLICATION', 'int', 10_000),
  F('streamHealthMs', 'STREAM_HEALTH_MS', 'int', 15_000),
  F('streamsPerApplication', 'STREAMS_PER_APPLICATION', 'int', 32),
  F('streamMaxBufferedBytes', 'STREAM_MAX_BUFFERED_BYTES', 'int', 1024 * 1024),
  F('simulatorMqttUrl', 'SIMULATOR_MQTT_URL', 'string', null),
  F('mqttPublicUrl', 'MQTT_PUBLIC_URL', 'string', null),
  F('collisionImpactG', 'COLLISION_IMPACT_G', 'number', 2.5),
  F('collisionMinSpeedKmh', 'COLLISION_MIN_SPEED_KMH', 'number', 15),
  F('collisionMergeMs', 'COLLISION_MERGE_MS', 'int', 10_000),
  F('batteryRecentHours', 'BATTERY_RECENT_HOURS', 'int', 72),
  F('mqttMaxPacketBytes', 'MQTT_MAX_PACKET_BYTES', 'int', null),
  F('mqttConnectTimeoutMs', 'MQTT_CONNECT_TIMEOUT_MS', 'int', 10_000),
  F('mqttCredentialsCheckMs', 'MQTT_CREDENTIALS_CHECK_MS', 'int', 10_000),
  // A device subscribes to one topic (its commands): 8 leaves room for client libraries that batch resubscriptions.
  F('mqttMaxSubscribeFilters', 'MQTT_MAX_SUBSCRIBE_FILTERS', 'int', 8),
  // devices/<36-character id>/frames is 50 bytes.
  F('mqttMaxTopicBytes', 'MQTT_MAX_TOPIC_BYTES', 'int', 256),
  F('mqttLogThrottleMs', 'MQTT_LOG_THROTTLE_MS', 'int', 10_000),
  F('dbAcquireTimeoutMs', 'DB_ACQUIRE_TIMEOUT_MS', 'int', 5_000),
  F('httpBodyLimitBytes', 'HTTP_BODY_LIMIT_BYTES', 'int', 1024 * 1024),
  F('httpRequestTimeoutMs', 'HTTP_REQUEST_TIMEOUT_MS', 'int', 30_000),
  F('httpHeadersTimeoutMs', 'HTTP_HEADERS_TIMEOUT_MS', 'int', 10_000),
  // As Kestrel's MinRequestBodyDataRate: 240 bytes/s after a 5 s grace.
  F('httpBodyMinBytesPerSec', 'HTTP_BODY_MIN_BYTES_PER_SEC', 'int', 240),
  F('httpBodyGraceMs', 'HTTP_BODY_GRACE_MS', 'int', 5_000),
  F('httpMaxConnectionsPerIp', 'HTTP_MAX_CONNECTIONS_PER_IP', 'int', 256),
  F('tripGapMs', 'TRIP_GAP_MS', 'int', 15 * 60_000),
  F('tripStationaryMs', 'TRIP_STATIONARY_MS', 'int', 180_000),
  F('tripMotionKmh', 'TRIP_MOTION_KMH', 'number', 5),
  F('tripSweepMs', 'TRIP_SWEEP_MS', 'int', 30_000),
  F('lateRecomputeMaxMessages', 'LATE_RECOMPUTE_MAX_MESSAGES', 'int', 10_000),
  F('lateRecomputeMaxAgeMs', 'LATE_RECOMPUTE_MAX_AGE_MS', 'int', 24 * 60 * 60_000),
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

/** A setting's default, for code that also runs without a Config (the frame decoder outside the gateway). */
export function configDefault<K extends keyof Config>(key: K): Config[K] {
  return CONFIG_FIELDS.find((f) => f.key === key)!.def as Config[K];
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
  if (config.mqttCredentialsCheckMs === 0) problems.push('--mqtt-credentials-check-ms / DRIVEWIRE_MQTT_CREDENTIALS_CHECK_MS: must be at least 1');
  if (config.mqttMaxSubscribeFilters === 0) problems.push('--mqtt-max-subscribe-filters / DRIVEWIRE_MQTT_MAX_SUBSCRIBE_FILTERS: must be at least 1');
  if (config.mqttLogThrottleMs === 0) problems.push('--mqtt-log-throttle-ms / DRIVEWIRE_MQTT_LOG_THROTTLE_MS: must be at least 1');
  if (config.mqttMaxTopicBytes < 64) problems.push('--mqtt-max-topic-bytes / DRIVEWIRE_MQTT_MAX_TOPIC_BYTES: must be at least 64 (a device\'s own topics are 50 bytes)');
  if (config.dbAcquireTimeoutMs === 0) problems.push('--db-acquire-timeout-ms / DRIVEWIRE_DB_ACQUIRE_TIMEOUT_MS: must be at least 1');
  if (config.webhookConcurrency === 0) problems.push('--webhook-concurrency / DRIVEWIRE_WEBHOOK_CONCURRENCY: must be at least 1');
  if (config.webhookEndpointConcurrency === 0 || config.webhookEndpointConcurrency > config.webhookConcurrency) {
    problems.push('--webhook-endpoint-concurrency / DRIVEWIRE_WEBHOOK_ENDPOINT_CONCURRENCY: must be at least 1 and at most the webhook concurrency');
  }
  if (config.webhookApplicationConcurrency === 0 || config.webhookApplicationConcurrency > config.webhookConcurrency) {
    problems.push('--webhook-application-concurrency / DRIVEWIRE_WEBHOOK_APPLICATION_CONCURRENCY: must be at least 1 and at most the webhook concurrency');
  }
  if (config.httpBodyLimitBytes === 0) problems.push('--http-body-limit-bytes / DRIVEWIRE_HTTP_BODY_LIMIT_BYTES: must be at least 1');
  if (config.streamsPerApplication === 0) problems.push('--streams-per-application / DRIVEWIRE_STREAMS_PER_APPLICATION: must be at least 1');
  if (config.streamMaxBufferedBytes === 0) problems.push('--stream-max-buffered-bytes / DRIVEWIRE_STREAM_MAX_BUFFERED_BYTES: must be at least 1');
  if (config.httpRequestTimeoutMs === 0) problems.push('--http-request-timeout-ms / DRIVEWIRE_HTTP_REQUEST_TIMEOUT_MS: must be at least 1');
  // 0 would bound a late span to nothing (and OFFSET max_n - 1 is negative in db/late-bound.sql.ts)
  if (config.lateRecomputeMaxMessages === 0) problems.push('--late-recompute-max-messages / DRIVEWIRE_LATE_RECOMPUTE_MAX_MESSAGES: must be at least 1');
  if (config.lateRecomputeMaxAgeMs === 0) problems.push('--late-recompute-max-age-ms / DRIVEWIRE_LATE_RECOMPUTE_MAX_AGE_MS: must be at least 1');
  // a bucket 0 deep never holds the unit a payload needs, so every payload would be refused or wait (rate 0: no limit)
  if (config.deviceFramesPerSecond > 0 && config.deviceFramesBurst === 0) {
    problems.push('--device-frames-burst / DRIVEWIRE_DEVICE_FRAMES_BURST: must be at least 1 while the rate is above 0');
  }
  if (config.deviceBytesPerSecond > 0 && config.deviceBytesBurst === 0) {
    problems.push('--device-bytes-burst / DRIVEWIRE_DEVICE_BYTES_BURST: must be at least 1 while the rate is above 0');
  }
  if (config.httpHeadersTimeoutMs === 0 || config.httpHeadersTimeoutMs > config.httpRequestTimeoutMs) {
    problems.push('--http-headers-timeout-ms / DRIVEWIRE_HTTP_HEADERS_TIMEOUT_MS: must be at least 1 and at most the request timeout');
  }
  if (problems.length) throw new ConfigError(problems);
  config.mqttMaxPacketBytes ??= config.maxPayloadBytes + MQTT_PACKET_HEADROOM;
  config.dataDir = path.resolve(config.dataDir);
  return config;
}

/** The server's own origin for links when no --public-url is set. */
export function publicUrl(config: Config, port = config.httpPort): string {
  return config.publicUrl ?? `http://localhost:${port}`;
}
