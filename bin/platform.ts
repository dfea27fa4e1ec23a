import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { publicUrl as publicUrlOf, type Config, type PartName } from '../lib/config.js';
import { rethrowPortInUse } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { createBus, type Bus } from '../lib/bus.js';
import { autoAnalyze, migrateLatest, openConfiguredDatabase, repositories, type Db, type Repositories } from '../db/index.js';
import { buildApi } from '../api/app.js';
import { createMessageFeed } from '../db/message-feed.js';
import type { Part, PartDeps } from '../db/part.js';
import { ensureCredentials, held, type Credentials, type HeldCredentials } from './credentials.js';
import { announce, followApiUrl, gatewayPublicMqttUrl, runs } from './roles.js';
import { startRunScheduler } from '../simulator/scheduler.js';
import { startNotificationWorker } from '../workers/notifications/index.js';
import { startRetention } from '../workers/retention/expiry.js';
import { startTripSweep } from '../workers/trips/sweep.js';
import { startCommandExpiry } from '../workers/commands/expiry.js';
import { startPresencePass } from '../workers/presence/pass.js';
import { startGateway } from '../gateway/gateway.js';
import { assertPortsFree, mqttPorts } from '../gateway/listeners.js';

export type { Part, PartDeps };

export interface Platform {
  config: Config;
  db: Db;
  repos: Repositories;
  bus: Bus;
  api: FastifyInstance;
  apiUrl: string;
  parts: Part[];
  /** The default application and admin token; reading them throws where this part does not hold them. */
  credentials: HeldCredentials;
  /** What this part's credentials.json holds (null where it does not know them). */
  credentialsFile: Credentials;
  /** True when this start created the default application and admin token (the first start on the database). */
  credentialsCreated: boolean;
  close(): Promise<void>;
}

/**
 * Starts the platform: database (PostgreSQL with DATABASE_URL, else PGlite in <data-dir>/pgdata),
 * migrations, then the parts selected by --only. The HTTP server always runs: the API for
 * `all`/`api`, only /health and /metrics for the gateway or workers alone.
 */
export async function startPlatform(config: Config, log: Logger, opts: { db?: Db } = {}): Promise<Platform> {
  await assertPortsFree([
    { port: config.httpPort, host: config.host, what: 'HTTP API', flag: '--http-port' },
    ...(runs(config, 'gateway') ? mqttPorts(config) : []),
  ]);
  const db = opts.db ?? await openConfiguredDatabase(config, (m) => log.warn(m));
  const parts: Part[] = [];
  let api: FastifyInstance | undefined;
  let feed: ReturnType<typeof createMessageFeed> | null = null;
  let unfollow = async (): Promise<void> => {};
  // The tables it analyzes grow by ingest and delivery: only the processes that run those parts watch them.
  const analyzer = runs(config, 'gateway') || runs(config, 'workers') ? autoAnalyze(db.knex) : null;
  try {
    await migrateLatest(db.knex);
    unfollow = await followApiUrl(db.knex, config, log);
    const repos = repositories(db.knex);
    const bus = createBus();
    const deps: PartDeps = { config, db, repos, log, bus };
    for (const [name, start] of PART_STARTERS) {
      if (runs(config, name)) parts.push(await start(deps, parts));
    }
    // This process's own base (the API, or /health and /metrics); links follow config.publicUrl (roles.ts).
    const ownUrl = config.publicUrl && runs(config, 'api') ? config.publicUrl : null;
    const publicUrl = () => ownUrl ?? (runs(config, 'api') ? publicUrlOf(config) : `http://localhost:${config.httpPort}`);
    // The live stream follows the database's commit-ordered feed on PostgreSQL, where other processes may run
    // gateways too; on PGlite (one process) the in-process gateway's bus, unless no gateway runs here.
    feed = runs(config, 'api') && (db.kind === 'pg' || !runs(config, 'gateway')) ? createMessageFeed(db) : null;
    await feed?.ready;
    api = await buildApi({
      config, db, repos, log,
      live: {
        onMessage: (deviceId, fn) => (feed ? feed.onMessage(deviceId, fn) : bus.onMessage(deviceId, fn)),
        health: async () => Object.assign({}, ...(await Promise.all(parts.map((p) => p.health?.() ?? {})))),
        metrics: async () => (await Promise.all(parts.map((p) => p.metrics?.() ?? ''))).join('\n'),
      },
    }, { publicUrl, only: runs(config, 'api') ? 'all' : 'system' });
    try {
      await api.listen({ port: config.httpPort, host: config.host });
    } catch (err) {
      rethrowPortInUse(err, config.httpPort, 'HTTP API', '--http-port');
    }
    // Port 0 asks for any free port: from here on the config says which one, so every part's
    // links (API, rule events, webhook payloads) name the port actually bound.
    config.httpPort = (api.server.address() as AddressInfo).port;
    const mqtt = runs(config, 'gateway') ? gatewayPublicMqttUrl(config, parts.find((p) => p.urls?.mqtt)?.urls?.mqtt ?? null) : null;
    const api_ = runs(config, 'api') ? publicUrl() : undefined;
    await announce(db.knex, { api: api_, mqtt });
    const { credentials, created } = await ensureCredentials(db.knex, repos, config.dataDir, { apiUrl: api_, mqttUrl: mqtt ?? undefined });
    const server = api;
    return {
      config, db, repos, bus, api: server, apiUrl: publicUrl(), parts,
      credentials: held(credentials, config.dataDir), credentialsFile: credentials, credentialsCreated: created,
      async close() {
        await analyzer?.stop();
        await unfollow();
        await feed?.close();
        await server.close();
        for (const part of [...parts].reverse()) await part.close();
        if (!opts.db) await db.close();
      },
    };
  } catch (err) {
    await analyzer?.stop();
    await unfollow();
    await api?.close().catch(() => {});
    await feed?.close();
    for (const part of parts.reverse()) await part.close().catch(() => {});
    if (!opts.db) await db.close().catch(() => {});
    throw err;
  }
}

/**
 * The parts, in start order (one explicit list); they stop in the reverse order. A starter sees
 * the parts started before it (e.g. the run scheduler finds the in-process gateway's MQTT URL). The notification
 * worker starts before the gateway and stops after it: the gateway's last batches, committed while it stops, hand
 * their notifications to a worker that still runs (lib/bus.ts), which delivers them before it stops in turn.
 */
const PART_STARTERS: [PartName, (deps: PartDeps, started: Part[]) => Promise<Part>][] = [
  ['workers', (deps) => startNotificationWorker(deps)],
  ['gateway', startGateway],
  ['workers', startRunScheduler],
  ['workers', startTripSweep],
  ['workers', startRetention],
  ['workers', startCommandExpiry],
  ['workers', startPresencePass],
];
