// The gateway part of `drivewire serve`: broker + transports + ingest pipeline + stages.
import os from 'node:os';
import type { Aedes } from 'aedes';
import type { Bus } from '../lib/bus.js';
import type { Config } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import { companionPool, repositories, type Db, type Repositories } from '../db/index.js';
import { createBroker } from './broker.js';
import { createIngestPipeline, type IngestPipeline } from './ingest.pipeline.js';
import { INGEST_STAGES } from './ingest.stages.js';
import { startListeners, type Listeners } from './listeners.js';
import { createGatewayMetrics } from './metrics.js';
import { connectRedis } from './redis.js';
import { watchCredentials } from './credentials-watch.js';
import { logThrottle } from './log-throttle.js';
import { feedFollowed } from '../db/message-feed.js';
import type { IngestStage } from './ingest.types.js';
import { startCommands, type GatewayCommands } from './commands.js';
import { startPresence, type GatewayPresence } from './presence.js';

export interface GatewayDeps { config: Config; db: Db; repos: Repositories; log: Logger; bus: Bus }

export interface Gateway {
  name: 'gateway';
  ports: Listeners['ports'];
  urls: Record<string, string>;
  broker: Aedes;
  pipeline: IngestPipeline;
  health(): Promise<Record<string, boolean>>;
  metrics(): Promise<string>;
  /** Logs the counts of the log throttle's open windows now (as at close). */
  flushLogs(): void;
  close(): Promise<void>;
}

/** Queued frames, in batches, beyond which QoS 0 publishers wait for their commit too. */
const HIGH_WATER_BATCHES = 20;
/**
 * Batch transactions at once on PostgreSQL (devices split between them, each device's frames in order; at a trickle
 * one transaction takes them all: ingest.pipeline.ts): one per core, at least 2, so that while one lane waits on the
 * database another decodes and prepares. More lanes than cores only cut the batches smaller and store fewer
 * frames a second (docs/development/performance.md). PGlite has a single connection: 1.
 */
const PG_LANES = Math.max(2, os.availableParallelism());
/** Connections of the pool the gateway's commands and presence use (PostgreSQL). */
const TALK_POOL = 3;

/**
 * Starts the gateway; a port in use stops start-up with a PortInUseError naming the port and its flag,
 * an unreachable --mqtt-redis-url with a RedisUnavailableError naming the URL and the flag.
 */
export async function startGateway(deps: GatewayDeps): Promise<Gateway> {
  const { config, db, repos, bus } = deps;
  const log = deps.log.child({ part: 'gateway' });
  const redis = config.mqttRedisUrl ? await connectRedis(config.mqttRedisUrl, log) : null;
  const stages: IngestStage[] = INGEST_STAGES.map((make) => make({ config, knex: db.knex, repos, log }));
  let broker: Aedes | undefined;
  let pipeline: IngestPipeline | undefined;
  let commands: GatewayCommands | undefined;
  let presence: GatewayPresence | undefined;
  const metrics = createGatewayMetrics({
    connectedClients: () => broker?.connectedClients ?? 0,
    queueDepth: () => pipeline?.depth() ?? 0,
  });
  const p = pipeline = createIngestPipeline({
    knex: db.knex, repos, stages, batchSize: Math.max(1, config.ingestBatchSize), batchMs: config.ingestBatchMs, metrics, bus, log,
    lanes: db.kind === 'pg' ? PG_LANES : 1,
    // Unread on PGlite, the feed would only add to every batch transaction
    feed: () => feedFollowed(db),
  });
  // Commands and presence on a pool of their own: in one process with the API, its requests fill the shared pool, and
  // a device's command would wait behind them at each of its steps.
  const talk = companionPool(db, TALK_POOL);
  const talkRepos = repositories(talk.knex);
  const credentials = watchCredentials({ db, periodMs: config.mqttCredentialsCheckMs, log });
  const throttle = logThrottle(log, config.mqttLogThrottleMs);
  // After the broker: commit what is queued, end the stages, close the Redis connections.
  const closeRest = async () => {
    await presence?.close();
    await commands?.close();
    await talk.close();
    await credentials.close();
    throttle.flush();
    await p.close();
    for (const stage of stages) await stage.close?.();
    await redis?.close();
  };
  try {
    broker = await createBroker({
      repos, pipeline: p, metrics, log, throttle, maxPayloadBytes: config.maxPayloadBytes, maxTopicBytes: config.mqttMaxTopicBytes,
      maxFutureSkewMs: config.maxFutureSkewMs, dummyMaxLeadMs: config.dummyMaxLeadMs, connectTimeoutMs: config.mqttConnectTimeoutMs,
      highWater: HIGH_WATER_BATCHES * Math.max(1, config.ingestBatchSize),
      rateLimits: {
        framesPerSecond: config.deviceFramesPerSecond, framesBurst: config.deviceFramesBurst,
        bytesPerSecond: config.deviceBytesPerSecond, bytesBurst: config.deviceBytesBurst, waitingBytes: config.deviceWaitingBytes,
      },
      shared: redis ? { mq: redis.mq, persistence: redis.persistence } : undefined, credentials,
      replies: (deviceId, payload) => commands!.reply(deviceId, payload),
      seen: (client) => presence?.seen(client),
    });
    commands = startCommands({ broker, db: talk, repos: talkRepos, bus, log });
    presence = startPresence({ broker, knex: talk.knex, repos: talkRepos, bus, log, graceMs: config.presenceGraceMs, heartbeatMs: config.gatewayHeartbeatMs });
    await presence.ready;
  } catch (err) {
    await closeRest();
    throw err;
  }
  const b = broker;
  // Stop accepting, disconnect the clients (their sockets hold the servers open), then the rest.
  const stop = async (listeners?: Listeners) => {
    const closing = listeners?.close();
    await new Promise<void>((resolve) => b.close(() => resolve()));
    await closing;
    await closeRest();
  };
  let listeners: Listeners;
  try {
    listeners = await startListeners(b, config, (cut, remote) => {
      metrics.connectionsRefused.inc({ reason: cut.reason });
      if (cut.reason === 'packet_too_large') {
        throttle.warn(remote ?? '', cut.reason, { declared: cut.declared, limit: config.mqttMaxPacketBytes, remote },
          'MQTT connection cut: packet over --mqtt-max-packet-bytes');
      } else {
        throttle.warn(remote ?? '', cut.reason, { limit: config.mqttMaxSubscribeFilters, remote },
          `MQTT connection cut: SUBSCRIBE of more than ${config.mqttMaxSubscribeFilters} filters`);
      }
    });
  } catch (err) {
    await stop();
    throw err;
  }
  log.info({ ports: listeners.ports }, 'MQTT gateway listening');
  return {
    name: 'gateway', ports: listeners.ports, urls: listeners.urls, broker: b, pipeline: p,
    health: async () => ({ broker: !b.closed && listeners.listening(), ...(redis && { redis: redis.up() }) }),
    metrics: () => metrics.registry.metrics(),
    flushLogs: () => throttle.flush(),
    close: () => stop(listeners),
  };
}
