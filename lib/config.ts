import path from 'node:path';
import { SERVICE_KINDS, type ServiceKind } from './services.js';

/*
 * Every setting of drivewire, declared once in SETTINGS below: its Config key, environment variable, flag, type,
 * default, unit, description and constraints. From the declarations come the Config type, loadConfig's parsing and
 * validation (flag > environment > default; every problem reported at once), the commander options of
 * `drivewire serve` (bin/settings.ts) and docs/reference/configuration.md (`npm run docs`).
 */

export type PartName = 'api' | 'gateway' | 'workers';
export const PART_NAMES: readonly PartName[] = ['api', 'gateway', 'workers'];

/**
 * What a setting's value is, and how text from a flag or the environment becomes one:
 * `int` a non-negative integer, `number` a non-negative number, `port` 0-65535, `bool` 1/true/yes/on or
 * 0/false/no/off, `url` an http(s) URL (trailing slashes cut), `tiles` a Leaflet tile URL template, `enum` one of
 * `values`, `parts` a comma-separated list of parts, `path` a path resolved against the working directory,
 * `serviceUrls` one http(s) URL per sub-service (`--url-<service>`).
 */
export type Kind = 'string' | 'path' | 'int' | 'number' | 'port' | 'bool' | 'url' | 'tiles' | 'enum' | 'parts' | 'serviceUrls';

/** The sections of `serve --help` and of the configuration reference, in their order. */
export const GROUPS = [
  'Parts and storage', 'Retention', 'HTTP API', 'Live stream', 'Web console', 'MQTT gateway', 'Ingest', 'Trips',
  'Diagnostics and collisions', 'Webhooks', 'Simulator',
] as const;
export type Group = (typeof GROUPS)[number];

/** What a setting's parsed values are checked against, with each other. */
type Values = Readonly<Record<string, unknown>>;

/** A constraint beyond the kind's: `text` completes "must be …" in the problem and in the reference. */
export interface Rule {
  readonly text: string;
  /** The other setting it compares with; checked only when that one parsed. */
  readonly refers?: string;
  holds(value: unknown, config: Values): boolean;
}

export interface Setting {
  readonly kind: Kind;
  readonly env: string;
  /** Read when `env` is unset or empty (and no flag is given). */
  readonly envFallback?: string;
  readonly group: Group;
  /** One line: `serve --help` and the reference. */
  readonly description: string;
  /** Why the default is what it is, and what else to know: the reference only. */
  readonly notes?: string;
  readonly unit?: string;
  /** null: unset (what that means is `defaultText`), or derived from other settings by `derive`. */
  readonly def: string | number | boolean | null;
  readonly defaultText?: string;
  readonly derive?: (config: Values) => unknown;
  readonly values?: readonly string[];
  readonly rules?: readonly Rule[];
  /** The flag's value placeholder (`--http-port <port>`); by default from the kind and unit. */
  readonly arg?: string;
}

const atLeast = (n: number, why?: string): Rule => ({
  text: `at least ${n}${why ? ` (${why})` : ''}`,
  holds: (v) => v === null || (v as number) >= n,
});
/** At most another setting's value (`what` names it in the problem). */
const atMost = (key: string, what: string): Rule => ({
  text: `at most ${what}`, refers: key,
  holds: (v, c) => v === null || (v as number) <= (c[key] as number),
});
/** At least `n` while another setting is above 0. */
const atLeastWhile = (n: number, key: string, what: string): Rule => ({
  text: `at least ${n} while ${what}`, refers: key,
  holds: (v, c) => !((c[key] as number) > 0) || (v as number) >= n,
});
const givenWith = (key: string): Rule => ({
  text: `given together with ${flagOf(key)} (both or neither)`, refers: key,
  holds: (v, c) => (v === null) === (c[key] === null),
});

/**
 * Room above the payload limit in the default packet limit: any topic (at most 65,535 bytes) fits around a payload
 * of the maximum size, and a payload somewhat over it is still read, refused as a dead letter and acknowledged (so
 * the device does not resend it forever) rather than cutting the connection.
 */
export const MQTT_PACKET_HEADROOM = 64 * 1024;

const PERFORMANCE = 'docs/development/performance.md';

/** A retention setting (docs/operations/retention.md): days kept, unset by default (keep everything), at least 1. */
const retention = (env: string, description: string, notes?: string) => ({
  kind: 'int', env, group: 'Retention', def: null, defaultText: 'keep everything', unit: 'days', arg: 'n',
  rules: [atLeast(1)], description, ...(notes === undefined ? {} : { notes }),
}) as const;

export const SETTINGS = {
  // Parts and storage
  only: {
    kind: 'parts', env: 'DRIVEWIRE_ONLY', group: 'Parts and storage', def: 'all', values: ['all', ...PART_NAMES], arg: 'parts',
    description: 'the parts this process runs: all, or a comma-separated list of api, gateway, workers (e.g. api,workers)',
    notes: 'Several processes, each running some of the parts, share one PostgreSQL database (docs/operations/scale-out.md). '
      + 'The HTTP server always runs: without the API part it serves only /health and /metrics.',
  },
  dataDir: {
    kind: 'path', env: 'DRIVEWIRE_DATA_DIR', group: 'Parts and storage', def: '.drivewire', arg: 'dir',
    description: 'data directory: the embedded database (<data-dir>/pgdata) and credentials.json',
    notes: 'Resolved against the working directory. The client commands read credentials.json from it too.',
  },
  databaseUrl: {
    kind: 'string', env: 'DRIVEWIRE_DATABASE_URL', envFallback: 'DATABASE_URL', group: 'Parts and storage', def: null, arg: 'url',
    defaultText: 'the embedded PGlite in <data-dir>/pgdata',
    description: 'PostgreSQL + PostGIS URL (postgres://user:password@host:5432/db)',
    notes: 'The embedded database serves one process; several processes, or a fleet of any size, need PostgreSQL '
      + '(docs/operations/postgresql.md).',
  },
  logLevel: {
    kind: 'enum', env: 'DRIVEWIRE_LOG_LEVEL', group: 'Parts and storage', def: 'info', arg: 'level',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    description: 'log level: JSON lines on stdout, human-readable ones on a terminal',
  },

  // Retention
  retentionDays: retention('DRIVEWIRE_RETENTION_DAYS',
    "days of telemetry (messages) kept; each day's partition is dropped once it is older (docs/operations/retention.md)",
    'Expiry drops whole days by the frames\' own time; the summaries derived from them stay: trips with their '
      + 'statistics and previews, report cards, odometers, trouble-code occurrences, collisions, vehicles and events. '
      + 'The workers run an expiry pass at start and every hour; `drivewire retention apply` runs one now.'),
  transactionRetentionDays: retention('DRIVEWIRE_TRANSACTION_RETENTION_DAYS',
    "days of the transaction log (one line per API call) kept; a month's partition goes once all of it is older"),
  notificationRetentionDays: retention('DRIVEWIRE_NOTIFICATION_RETENTION_DAYS',
    "days of webhook notifications and their attempts kept; a month's partition goes once all of it is older",
    'Retries end within minutes (--webhook-max-attempts, --webhook-backoff-ms), long before a retention of days '
      + "reaches a notification; a paused subscription's notifications older than the retention go with the rest, and "
      + 'resuming it delivers those that remain.'),
  deadLetterRetentionDays: retention('DRIVEWIRE_DEAD_LETTER_RETENTION_DAYS',
    "days of dead letters (refused frames) kept; a month's partition goes once all of it is older"),

  // HTTP API
  host: {
    kind: 'string', env: 'DRIVEWIRE_HOST', group: 'HTTP API', def: '0.0.0.0', arg: 'host',
    description: 'interface the HTTP server listens on',
  },
  httpPort: {
    kind: 'port', env: 'DRIVEWIRE_HTTP_PORT', group: 'HTTP API', def: 3000,
    description: 'HTTP port of the API (0: any free port)',
  },
  publicUrl: {
    kind: 'url', env: 'DRIVEWIRE_PUBLIC_URL', group: 'HTTP API', def: null,
    defaultText: "an API part's http://localhost:<port>; other parts: the URL an API part announced",
    description: 'public base URL of the API, the base of every link',
  },
  serviceUrls: {
    kind: 'serviceUrls', env: 'DRIVEWIRE_URL_<SERVICE>', group: 'HTTP API', def: null, defaultText: 'the public URL',
    description: `link base of one sub-service; <service> is one of ${SERVICE_KINDS.join(', ')}`,
    notes: 'Links to a sub-service\'s resources start with its base, for deployments that serve the sub-services '
      + 'under different hosts or paths.',
  },
  servicePrefix: {
    kind: 'string', env: 'DRIVEWIRE_SERVICE_PREFIX', group: 'HTTP API', def: 'drivewire', arg: 'prefix',
    description: 'prefix of the transaction service names (<prefix>-<kind>-service)',
  },
  httpBodyLimitBytes: {
    kind: 'int', env: 'DRIVEWIRE_HTTP_BODY_LIMIT_BYTES', group: 'HTTP API', def: 1024 * 1024, unit: 'bytes', rules: [atLeast(1)],
    description: 'largest HTTP request body; a larger one is answered 413',
  },
  httpRequestTimeoutMs: {
    kind: 'int', env: 'DRIVEWIRE_HTTP_REQUEST_TIMEOUT_MS', group: 'HTTP API', def: 30_000, unit: 'ms', rules: [atLeast(1)],
    description: 'time within which a whole HTTP request (headers and body) must arrive; later, 408 and the connection closed',
    notes: 'Once a request has arrived, its handling has no time limit.',
  },
  httpHeadersTimeoutMs: {
    kind: 'int', env: 'DRIVEWIRE_HTTP_HEADERS_TIMEOUT_MS', group: 'HTTP API', def: 10_000, unit: 'ms',
    rules: [atLeast(1), atMost('httpRequestTimeoutMs', 'the request timeout')],
    description: "time within which an HTTP request's headers must arrive; later, 408 and the connection closed",
  },
  httpBodyMinBytesPerSec: {
    kind: 'int', env: 'DRIVEWIRE_HTTP_BODY_MIN_BYTES_PER_SEC', group: 'HTTP API', def: 240, unit: 'bytes/s', arg: 'n',
    description: 'least average rate of a request body once the grace has passed, else 408; 0 = no minimum',
    notes: "As Kestrel's MinRequestBodyDataRate: 240 bytes/s after a 5 s grace. It closes a connection that trickles its "
      + 'body in to hold the server, long before the request timeout.',
  },
  httpBodyGraceMs: {
    kind: 'int', env: 'DRIVEWIRE_HTTP_BODY_GRACE_MS', group: 'HTTP API', def: 5_000, unit: 'ms',
    description: 'time a request body may take before its average rate must reach --http-body-min-bytes-per-sec',
  },
  httpMaxConnectionsPerIp: {
    kind: 'int', env: 'DRIVEWIRE_HTTP_MAX_CONNECTIONS_PER_IP', group: 'HTTP API', def: 256, unit: 'connections', arg: 'n',
    description: 'open HTTP connections (live streams included) one client address may hold; more are answered 503 and closed; 0 = no cap',
    notes: "Behind a reverse proxy every client shares the proxy's address: raise it there, or set it to 0 and limit "
      + 'connections at the proxy.',
  },
  dbAcquireTimeoutMs: {
    kind: 'int', env: 'DRIVEWIRE_DB_ACQUIRE_TIMEOUT_MS', group: 'HTTP API', def: 5_000, unit: 'ms', rules: [atLeast(1)],
    description: 'time an API request waits for a database connection before it is answered 503 with Retry-After',
    notes: 'The gateway and the workers keep waiting for a connection rather than failing.',
  },

  // Live stream
  streamHealthMs: {
    kind: 'int', env: 'DRIVEWIRE_STREAM_HEALTH_MS', group: 'Live stream', def: 15_000, unit: 'ms',
    description: 'interval of the health frames on the live stream',
  },
  streamsPerApplication: {
    kind: 'int', env: 'DRIVEWIRE_STREAMS_PER_APPLICATION', group: 'Live stream', def: 32, unit: 'streams', arg: 'n', rules: [atLeast(1)],
    description: 'live streams one application may hold open at once on one API process; one more is answered 429',
  },
  streamMaxBufferedBytes: {
    kind: 'int', env: 'DRIVEWIRE_STREAM_MAX_BUFFERED_BYTES', group: 'Live stream', def: 1024 * 1024, unit: 'bytes', rules: [atLeast(1)],
    description: 'bytes waiting to be sent to one live stream (a client not reading); past it the stream is closed with code 1013',
  },

  // Web console
  tileUrl: {
    kind: 'tiles', env: 'DRIVEWIRE_TILE_URL', group: 'Web console', def: 'https://tile.openstreetmap.org/{z}/{x}/{y}.png', arg: 'template',
    description: "map tiles of the web console: a Leaflet URL template with {z}, {x} and {y} ({s} allowed)",
  },
  tileAttribution: {
    kind: 'string', env: 'DRIVEWIRE_TILE_ATTRIBUTION', group: 'Web console', arg: 'html',
    def: '&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors',
    description: "attribution shown under the console's map tiles (HTML, as Leaflet takes it)",
  },

  // MQTT gateway
  mqttHost: {
    kind: 'string', env: 'DRIVEWIRE_MQTT_HOST', group: 'MQTT gateway', def: '0.0.0.0', arg: 'host',
    description: 'interface the MQTT listeners listen on',
  },
  mqttPort: {
    kind: 'port', env: 'DRIVEWIRE_MQTT_PORT', group: 'MQTT gateway', def: 1883,
    description: 'MQTT over TCP port (0: any free port)',
  },
  mqttWsPort: {
    kind: 'port', env: 'DRIVEWIRE_MQTT_WS_PORT', group: 'MQTT gateway', def: null, defaultText: 'off',
    description: 'MQTT over WebSocket port',
  },
  mqttTlsPort: {
    kind: 'port', env: 'DRIVEWIRE_MQTT_TLS_PORT', group: 'MQTT gateway', def: null, defaultText: 'off',
    description: 'MQTT over TLS port (with --mqtt-tls-cert and --mqtt-tls-key)',
  },
  mqttTlsCert: {
    kind: 'string', env: 'DRIVEWIRE_MQTT_TLS_CERT', group: 'MQTT gateway', def: null, defaultText: 'none', arg: 'file',
    rules: [givenWith('mqttTlsKey')],
    description: 'TLS certificate of the MQTT TLS listener (PEM file)',
  },
  mqttTlsKey: {
    kind: 'string', env: 'DRIVEWIRE_MQTT_TLS_KEY', group: 'MQTT gateway', def: null, defaultText: 'none', arg: 'file',
    description: 'TLS private key of the MQTT TLS listener (PEM file)',
  },
  mqttPublicUrl: {
    kind: 'string', env: 'DRIVEWIRE_MQTT_PUBLIC_URL', group: 'MQTT gateway', def: null, arg: 'url',
    defaultText: "the gateway's own listener",
    description: 'MQTT URL (mqtt://, mqtts://, ws:// or wss://) a gateway announces to the other parts',
    notes: 'Set it to the MQTT load balancer when gateways run on several hosts; the workers connect simulated devices to it. '
      + 'A gateway checks it when it starts.',
  },
  mqttRedisUrl: {
    kind: 'string', env: 'DRIVEWIRE_MQTT_REDIS_URL', group: 'MQTT gateway', def: null, arg: 'url',
    defaultText: 'off: an in-memory broker',
    description: 'Redis through which several gateway processes share one MQTT state (redis://host:6379/0, ?prefix=name)',
    notes: 'MQTT sessions, subscriptions and retained messages live in Redis, and every accepted payload is routed '
      + 'through it, so a device may reconnect to any gateway; ?prefix= lets several deployments share one Redis '
      + '(docs/operations/scale-out.md).',
  },
  mqttMaxPacketBytes: {
    kind: 'int', env: 'DRIVEWIRE_MQTT_MAX_PACKET_BYTES', group: 'MQTT gateway', def: null, unit: 'bytes',
    defaultText: `--max-payload-bytes + ${MQTT_PACKET_HEADROOM}`,
    derive: (c) => (c.maxPayloadBytes as number) + MQTT_PACKET_HEADROOM,
    description: 'largest MQTT packet (declared remaining length) a connection may send, authenticated or not; a larger one cuts the connection before it is read',
    notes: 'The default leaves room for any topic around a payload of the largest size, and a payload somewhat over the '
      + 'payload limit is still read, refused as a dead letter and acknowledged, so that the device does not resend it forever.',
  },
  mqttConnectTimeoutMs: {
    kind: 'int', env: 'DRIVEWIRE_MQTT_CONNECT_TIMEOUT_MS', group: 'MQTT gateway', def: 10_000, unit: 'ms', rules: [atLeast(1)],
    description: 'a connection that sends no CONNECT within this time is closed',
  },
  mqttCredentialsCheckMs: {
    kind: 'int', env: 'DRIVEWIRE_MQTT_CREDENTIALS_CHECK_MS', group: 'MQTT gateway', def: 10_000, unit: 'ms', rules: [atLeast(1)],
    description: "interval of a gateway's checks of every live MQTT session's device credentials",
    notes: 'A session whose device\'s secret changed without the gateway hearing of it closes within this time; '
      + 'a signalled change (a rotated secret, a deleted dummy) closes it at once.',
  },
  presenceGraceMs: {
    kind: 'int', env: 'DRIVEWIRE_PRESENCE_GRACE_MS', group: 'MQTT gateway', def: 30_000, unit: 'ms', rules: [atLeast(0)],
    description: 'how long a device whose connection closed stays online: a reconnect within it makes no device-offline or device-online event',
    notes: 'A device whose gateway stops without closing its connections (killed) counts as disconnected at that gateway\'s '
      + 'last heartbeat, and goes offline this long after it (docs/concepts/commands-and-presence.md).',
  },
  gatewayHeartbeatMs: {
    kind: 'int', env: 'DRIVEWIRE_GATEWAY_HEARTBEAT_MS', group: 'MQTT gateway', def: 5000, unit: 'ms', rules: [atLeast(100)],
    description: "interval of a gateway's heartbeat and presence pass; a gateway silent for 3 of them is taken for lost",
    notes: 'Devices\' last-seen times (frames and keep-alives) are written once per heartbeat; every process running a gateway '
      + 'or the workers runs a presence pass at this interval.',
  },
  mqttMaxSubscribeFilters: {
    kind: 'int', env: 'DRIVEWIRE_MQTT_MAX_SUBSCRIBE_FILTERS', group: 'MQTT gateway', def: 8, unit: 'filters', arg: 'n', rules: [atLeast(1)],
    description: 'topic filters one SUBSCRIBE may carry; more close the connection before it is handled',
    notes: 'A device subscribes to one topic (its commands): 8 leaves room for client libraries that batch resubscriptions.',
  },
  mqttMaxTopicBytes: {
    kind: 'int', env: 'DRIVEWIRE_MQTT_MAX_TOPIC_BYTES', group: 'MQTT gateway', def: 256, unit: 'bytes',
    rules: [atLeast(64, "a device's own topics are 50 bytes")],
    description: 'longest PUBLISH topic or SUBSCRIBE filter (UTF-8); a longer one closes the connection, and topics are cut to it in logs and dead letters',
    notes: 'devices/<36-character id>/frames is 50 bytes.',
  },
  mqttLogThrottleMs: {
    kind: 'int', env: 'DRIVEWIRE_MQTT_LOG_THROTTLE_MS', group: 'MQTT gateway', def: 10_000, unit: 'ms', rules: [atLeast(1)],
    description: 'window in which a gateway logs one line per client and reason, then one with the count of the repeats',
  },

  // Ingest
  maxPayloadBytes: {
    kind: 'int', env: 'DRIVEWIRE_MAX_PAYLOAD_BYTES', group: 'Ingest', def: 256 * 1024, unit: 'bytes',
    description: 'largest MQTT payload accepted; a larger one is refused as a dead letter (oversize) and acknowledged',
  },
  maxFutureSkewMs: {
    kind: 'int', env: 'DRIVEWIRE_MAX_FUTURE_SKEW_MS', group: 'Ingest', def: 60_000, unit: 'ms',
    description: "how far ahead of the gateway's clock a frame's ts may be; a frame stamped further ahead is refused",
    notes: 'Devices stamp frames from GNSS or NTP time, to well under a second, and a frame is sent after it is captured, '
      + "never before: 60 s leaves room for an unsynchronised clock's drift of weeks and for the gateway's own. What it "
      + "allows is also what it costs: a frame stamped ahead is the device's newest until real time passes it, and the "
      + "device's real frames meanwhile are late.",
  },
  dummyMaxLeadMs: {
    kind: 'int', env: 'DRIVEWIRE_DUMMY_MAX_LEAD_MS', group: 'Ingest', def: 6 * 3_600_000, unit: 'ms',
    description: "how far ahead of the gateway's clock a dummy's frame may be stamped (a real device keeps --max-future-skew-ms); "
      + 'the run scheduler waits rather than run a dummy further ahead',
    notes: 'A run at speed N stamps its frames from its start on at N times real time, so a dummy\'s clock runs ahead of '
      + 'the wall clock by up to (1 − 1/N) of the drive time of its runs back to back (docs/concepts/simulator.md (Time)). '
      + '6 h holds a day of repeated 8-minute drives at speed 50 without a wait, and bounds what a dummy can stamp ahead.',
  },
  deviceFramesPerSecond: {
    kind: 'number', env: 'DRIVEWIRE_DEVICE_FRAMES_PER_SECOND', group: 'Ingest', def: 500, unit: 'frames/s', arg: 'n',
    description: 'frames a device may publish per second in the long run; over it QoS 0 is dropped and counted, a QoS 1/2 acknowledgement waits; 0 = no limit',
    notes: 'Each device has a token bucket for frames and one for bytes. A dongle reports about 1 frame/s while driving (the '
      + "simulator's default), a fast one 10/s, and after a reconnect uploads what it kept offline in arrays: 500 frames/s "
      + "is 50 times a fast dongle and uploads an hour of 1 Hz backlog in about 7 s, and stays above the benchmarks' "
      + `closed-loop devices (${PERFORMANCE}), while one flooding device cannot take the ingest from the others.`,
  },
  deviceFramesBurst: {
    kind: 'int', env: 'DRIVEWIRE_DEVICE_FRAMES_BURST', group: 'Ingest', def: 1000, unit: 'frames', arg: 'n',
    rules: [atLeastWhile(1, 'deviceFramesPerSecond', 'the rate is above 0')],
    description: "frames a device may publish at once above its rate (the bucket's depth)",
    notes: "Two seconds of the rate: a much larger burst lets one device fill the batches for long enough that other devices' "
      + 'acknowledgements wait behind it. A bucket 0 deep never holds the frame a payload needs.',
  },
  deviceBytesPerSecond: {
    kind: 'number', env: 'DRIVEWIRE_DEVICE_BYTES_PER_SECOND', group: 'Ingest', def: 1024 * 1024, unit: 'bytes/s', arg: 'n',
    description: 'payload bytes a device may publish per second in the long run, limited as frames are; 0 = no limit',
    notes: 'The default is 500 frames/s of about 2 KB (a frame of every PID).',
  },
  deviceBytesBurst: {
    kind: 'int', env: 'DRIVEWIRE_DEVICE_BYTES_BURST', group: 'Ingest', def: 2 * 1024 * 1024, unit: 'bytes',
    rules: [atLeastWhile(1, 'deviceBytesPerSecond', 'the rate is above 0')],
    description: 'payload bytes a device may publish at once above its rate',
    notes: 'Two seconds of the rate: 8 payloads of the largest size.',
  },
  deviceWaitingBytes: {
    kind: 'int', env: 'DRIVEWIRE_DEVICE_WAITING_BYTES', group: 'Ingest', def: 1024 * 1024, unit: 'bytes',
    description: "payload bytes of a device's QoS 1/2 payloads that may wait for their turn over its rate; one more closes the connection (one payload always may)",
    notes: 'Waiting payloads are held in memory until taken: 1 MiB a device is four of the largest payloads and about 500 '
      + "typical frames, more than one connection's socket read holds; past it a device is reconnecting to pile them up.",
  },
  ingestBatchSize: {
    kind: 'int', env: 'DRIVEWIRE_INGEST_BATCH_SIZE', group: 'Ingest', def: 500, unit: 'frames', arg: 'n',
    description: 'frames that make an ingest batch (one transaction) due',
  },
  ingestBatchMs: {
    kind: 'int', env: 'DRIVEWIRE_INGEST_BATCH_MS', group: 'Ingest', def: 20, unit: 'ms',
    description: 'longest a frame waits for its ingest batch to fill',
  },
  lateRecomputeMaxMessages: {
    kind: 'int', env: 'DRIVEWIRE_LATE_RECOMPUTE_MAX_MESSAGES', group: 'Ingest', def: 10_000, unit: 'messages', arg: 'n', rules: [atLeast(1)],
    description: 'stored messages a late frame may make the trips, collisions and trouble-code stages re-read',
    notes: 'Past the bound, a trip is spliced exactly or left as it was, and collisions and trouble codes are re-derived '
      + 'from the bound on (docs/reference/limits.md). 0 would bound a late span to nothing.',
  },
  lateRecomputeMaxAgeMs: {
    kind: 'int', env: 'DRIVEWIRE_LATE_RECOMPUTE_MAX_AGE_MS', group: 'Ingest', def: 24 * 60 * 60_000, unit: 'ms', rules: [atLeast(1)],
    description: "how far back before the device's newest message a late frame may make them re-read",
  },

  // Trips
  trips: {
    kind: 'bool', env: 'DRIVEWIRE_TRIPS', group: 'Trips', def: true,
    description: 'derive trips at ingest (the trips stage); off only to measure its cost (bench ingest --trips compare)',
  },
  tripGapMs: {
    kind: 'int', env: 'DRIVEWIRE_TRIP_GAP_MS', group: 'Trips', def: 15 * 60_000, unit: 'ms',
    description: "a reporting gap this long ends a trip; the sweep closes a silent device's trip after it",
  },
  tripStationaryMs: {
    kind: 'int', env: 'DRIVEWIRE_TRIP_STATIONARY_MS', group: 'Trips', def: 180_000, unit: 'ms',
    description: 'a trip without ignition frames ends after this long without motion',
  },
  tripMotionKmh: {
    kind: 'number', env: 'DRIVEWIRE_TRIP_MOTION_KMH', group: 'Trips', def: 5, unit: 'km/h', arg: 'n',
    description: 'a sample at or above this speed is motion (it starts a trip without ignition frames)',
  },
  tripSweepMs: {
    kind: 'int', env: 'DRIVEWIRE_TRIP_SWEEP_MS', group: 'Trips', def: 30_000, unit: 'ms',
    description: "interval of the sweeps that close silent devices' open trips",
  },

  // Diagnostics and collisions
  collisionImpactG: {
    kind: 'number', env: 'DRIVEWIRE_COLLISION_IMPACT_G', group: 'Diagnostics and collisions', def: 2.5, unit: 'g', arg: 'n',
    description: 'an accelerometer sample at least this strong, while moving, is an impact',
    notes: 'At any speed, such a sample is not a hard brake or hard acceleration of its trip (docs/concepts/trips-and-report-cards.md).',
  },
  collisionMinSpeedKmh: {
    kind: 'number', env: 'DRIVEWIRE_COLLISION_MIN_SPEED_KMH', group: 'Diagnostics and collisions', def: 15, unit: 'km/h', arg: 'n',
    description: 'an impact is a collision only at or above this speed',
  },
  collisionMergeMs: {
    kind: 'int', env: 'DRIVEWIRE_COLLISION_MERGE_MS', group: 'Diagnostics and collisions', def: 10_000, unit: 'ms',
    description: 'impact samples closer than this belong to one collision',
  },
  batteryRecentHours: {
    kind: 'int', env: 'DRIVEWIRE_BATTERY_RECENT_HOURS', group: 'Diagnostics and collisions', def: 72, unit: 'h', arg: 'n',
    description: 'battery readings older than this give a batteryStatus of null',
  },

  // Webhooks
  allowPrivateWebhooks: {
    kind: 'bool', env: 'DRIVEWIRE_ALLOW_PRIVATE_WEBHOOKS', group: 'Webhooks', def: false,
    description: 'allow webhook URLs on loopback, private and link-local addresses',
    notes: 'Off, no subscription can make the workers call a service inside the deployment\'s network, whatever '
      + 'spelling of the address it uses.',
  },
  webhookTimeoutMs: {
    kind: 'int', env: 'DRIVEWIRE_WEBHOOK_TIMEOUT_MS', group: 'Webhooks', def: 10_000, unit: 'ms',
    description: 'time a webhook call may take; later, the attempt has failed',
  },
  webhookMaxAttempts: {
    kind: 'int', env: 'DRIVEWIRE_WEBHOOK_MAX_ATTEMPTS', group: 'Webhooks', def: 5, unit: 'attempts', arg: 'n',
    description: 'attempts a notification gets at most',
  },
  webhookBackoffMs: {
    kind: 'int', env: 'DRIVEWIRE_WEBHOOK_BACKOFF_MS', group: 'Webhooks', def: 1000, unit: 'ms',
    description: 'wait before the second attempt; each later one waits twice as long as the one before',
  },
  webhookConcurrency: {
    kind: 'int', env: 'DRIVEWIRE_WEBHOOK_CONCURRENCY', group: 'Webhooks', def: 64, unit: 'calls', arg: 'n', rules: [atLeast(1)],
    description: 'webhook calls in flight per worker process',
    notes: 'A claim refills a quarter of the slots at once and a record statement takes every call finished meanwhile, so '
      + 'more slots mean fewer database round trips per webhook: with 32 or 64 slots a queue of webhooks is delivered in '
      + `about two thirds of the time it takes with 16, and for less worker CPU per webhook (${PERFORMANCE}).`,
  },
  webhookEndpointConcurrency: {
    kind: 'int', env: 'DRIVEWIRE_WEBHOOK_ENDPOINT_CONCURRENCY', group: 'Webhooks', def: 16, unit: 'calls', arg: 'n',
    rules: [atLeast(1), atMost('webhookConcurrency', 'the webhook concurrency')],
    description: "calls in flight to one receiver's origin (scheme, host and port) per worker process, for a receiver that is slow or new",
    notes: 'A quarter of the slots: a receiver that never answers holds 16 of 64 for its timeout, the others keep 48. '
      + 'A receiver whose last call was answered within a second may use every free slot (docs/reference/limits.md#webhooks).',
  },
  webhookApplicationConcurrency: {
    kind: 'int', env: 'DRIVEWIRE_WEBHOOK_APPLICATION_CONCURRENCY', group: 'Webhooks', def: 32, unit: 'calls', arg: 'n',
    rules: [atLeast(1), atMost('webhookConcurrency', 'the webhook concurrency')],
    description: "calls in flight for one application's subscriptions per worker process, whatever their endpoints, for an application whose receivers are slow or new",
    notes: 'Half the slots: one application whose receivers (on any number of origins) never answer holds 32 of 64 for '
      + 'their timeout, the other applications keep 32; one application alone still has 32 calls at once, about as fast '
      + 'as 64 (see webhook concurrency).',
  },
  webhookPauseFailures: {
    kind: 'int', env: 'DRIVEWIRE_WEBHOOK_PAUSE_FAILURES', group: 'Webhooks', def: 20, unit: 'failures', arg: 'n',
    description: 'consecutive failed attempts after which a subscription is paused (with --webhook-pause-after-ms); 0 = never paused',
    notes: 'A paused subscription keeps its notifications; resuming it delivers them, oldest first.',
  },
  webhookPauseAfterMs: {
    kind: 'int', env: 'DRIVEWIRE_WEBHOOK_PAUSE_AFTER_MS', group: 'Webhooks', def: 10 * 60_000, unit: 'ms',
    description: "how long a subscription's attempts must have been failing, at least, before it is paused",
  },
  maxSubscriptionsPerApplication: {
    kind: 'int', env: 'DRIVEWIRE_MAX_SUBSCRIPTIONS_PER_APPLICATION', group: 'Webhooks', def: 10_000, unit: 'subscriptions', arg: 'n',
    description: 'subscriptions an application may have; creating one more is answered 409',
  },

  // Simulator
  simulatorMqttUrl: {
    kind: 'string', env: 'DRIVEWIRE_SIMULATOR_MQTT_URL', group: 'Simulator', def: null, arg: 'url',
    defaultText: "the in-process gateway's, else the URL the gateways announced",
    description: 'MQTT URL the run scheduler connects dummies to',
  },
} as const satisfies Record<string, Setting>;

export type SettingKey = keyof typeof SETTINGS;

type ValueOf<S extends Setting> =
  S['kind'] extends 'parts' ? PartName[]
    : S['kind'] extends 'bool' ? boolean
      : S['kind'] extends 'int' | 'number' | 'port' ? number
        : S extends { values: readonly (infer V)[] } ? V
          : string;

/** A setting's value: null where it has no default and is not derived (unset). */
type SettingValue<S extends Setting> =
  S['kind'] extends 'serviceUrls' ? Record<ServiceKind, string | null>
    : S extends { def: null } ? (S extends { derive: unknown } ? ValueOf<S> : ValueOf<S> | null)
      : ValueOf<S>;

/** The typed configuration, one key per declared setting. */
export type Config = { -readonly [K in SettingKey]: SettingValue<(typeof SETTINGS)[K]> };

export const SETTING_KEYS = Object.keys(SETTINGS) as SettingKey[];

export const setting = (key: SettingKey): Setting => SETTINGS[key];

function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** A setting's flag without a value (`--http-port`; `--url-<service>` for the sub-service URLs). */
export function flagOf(key: string): string {
  return key === 'serviceUrls' ? '--url-<service>' : `--${kebab(key)}`;
}

/** One way in to a setting: its key in loadConfig's flags, its flag and environment variable. */
export interface SettingInput {
  /** loadConfig's flags key: the setting's key, or `url.<service>` for a sub-service URL. */
  readonly key: string;
  readonly setting: SettingKey;
  readonly flag: string;
  readonly env: string;
  readonly service?: ServiceKind;
}

/** Every input in declaration order; a sub-service URL is one input per service. */
export const SETTING_INPUTS: readonly SettingInput[] = SETTING_KEYS.flatMap((k): SettingInput[] => {
  const s: Setting = SETTINGS[k];
  if (s.kind !== 'serviceUrls') return [{ key: k, setting: k, flag: flagOf(k), env: s.env }];
  return SERVICE_KINDS.map((service) => ({
    key: `url.${service}`, setting: k, flag: `--url-${service}`, env: `DRIVEWIRE_URL_${service.toUpperCase()}`, service,
  }));
});

/** How problems name a setting: `--http-port / DRIVEWIRE_HTTP_PORT`. */
export function settingLabel(key: SettingKey): string {
  return `${flagOf(key)} / ${SETTINGS[key].env}`;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

/** Text from a flag or the environment (or a value given in code) as the kind's value; a problem when it is not one. */
function coerce(s: Setting, input: SettingInput, raw: unknown, problems: string[]): unknown {
  if (s.kind === 'parts') return parts(s, input, raw === null || raw === undefined || raw === '' ? s.def : raw, problems);
  if (raw === null || raw === undefined || raw === '') return s.kind === 'path' && typeof s.def === 'string' ? path.resolve(s.def) : s.def;
  const where = `${input.flag} / ${input.env}`;
  const text = String(raw);
  switch (s.kind) {
    case 'int':
    case 'port': {
      const n = Number(text);
      const max = s.kind === 'port' ? 65535 : Number.MAX_SAFE_INTEGER;
      if (!Number.isInteger(n) || n < 0 || n > max) {
        problems.push(`${where}: "${text}" is not ${s.kind === 'port' ? 'a port (0-65535)' : 'a non-negative integer'}`);
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
      return s.def;
    case 'url':
    case 'serviceUrls':
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
        return s.def;
      }
    case 'enum':
      if (!s.values!.includes(text)) problems.push(`${where}: "${text}" must be one of ${s.values!.join(', ')}`);
      return text;
    case 'path':
      return path.resolve(text);
    default:
      return text;
  }
}

/** A comma-separated list of parts (`api,workers`); `all` stands for every part. */
function parts(s: Setting, input: SettingInput, raw: unknown, problems: string[]): PartName[] {
  const names = (Array.isArray(raw) ? raw.map(String) : String(raw).split(',')).map((n) => n.trim()).filter(Boolean);
  const out = new Set<PartName>();
  for (const name of names) {
    if (!s.values!.includes(name)) problems.push(`${input.flag} / ${input.env}: "${name}" must be one of ${s.values!.join(', ')}`);
    else if (name === 'all') for (const p of PART_NAMES) out.add(p);
    else out.add(name as PartName);
  }
  return [...out];
}

/** A setting's default, for code that also runs without a Config (the frame decoder outside the gateway). */
export function configDefault<K extends SettingKey>(key: K): Config[K] {
  const input = SETTING_INPUTS.find((i) => i.setting === key)!;
  return coerce(SETTINGS[key], input, undefined, []) as Config[K];
}

/** Where the embedded PGlite keeps its cluster in a data directory (`--data-dir`). */
export const embeddedDbDir = (dataDir: string) => path.join(dataDir, 'pgdata');

/**
 * The configuration from `flags` (camelCase keys as commander gives them; `url.<service>` for the sub-service URLs),
 * else `env`, else the defaults. Throws a ConfigError listing every problem.
 */
export function loadConfig(flags: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  const unparsed = new Set<string>();
  for (const input of SETTING_INPUTS) {
    const s: Setting = SETTINGS[input.setting];
    let raw = flags[input.key] ?? env[input.env];
    if ((raw === undefined || raw === '') && flags[input.key] === undefined && s.envFallback) raw = env[s.envFallback];
    const before = problems.length;
    const value = coerce(s, input, raw, problems);
    if (problems.length > before) unparsed.add(input.setting);
    if (input.service) ((out[input.setting] ??= {}) as Record<string, unknown>)[input.service] = value;
    else out[input.setting] = value;
  }
  for (const key of SETTING_KEYS) {
    const s: Setting = SETTINGS[key];
    if (!s.rules || unparsed.has(key) || s.rules.some((r) => r.refers && unparsed.has(r.refers))) continue;
    if (!s.rules.every((r) => r.holds(out[key], out))) problems.push(`${settingLabel(key)}: must be ${s.rules.map((r) => r.text).join(' and ')}`);
  }
  if (problems.length) throw new ConfigError(problems);
  for (const key of SETTING_KEYS) {
    const s: Setting = SETTINGS[key];
    if (s.derive && out[key] === null) out[key] = s.derive(out);
  }
  return out as unknown as Config;
}

/** The server's own origin for links when no --public-url is set. */
export function publicUrl(config: Config, port = config.httpPort): string {
  return config.publicUrl ?? `http://localhost:${port}`;
}
