// The run scheduler (a workers part): leases runs from the runs table and drives them with real
// MQTT dummy devices (run-driver.ts). Every `pollMs` it checks the runs it holds for stop requests
// (or deletion), renews their leases with their progress every `progressMs`, and claims runs that
// nobody holds: new ones (`starting`), ones released by a clean shutdown, and ones whose worker died
// (lease expired). A restart therefore resumes every active run from the beginning of its route;
// none is left `running`.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../db/index.js';
import type { ClaimedRun } from '../db/repositories/run-leases.repository.js';
import type { Run, RunProgress } from '../db/repositories/runs.repository.js';
import type { Config } from '../lib/config.js';
import { ConfigError, configDefault } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import { driveRun, type RunDriver } from './run-driver.js';
import { seedStoredRoutes } from './routes-seed.js';
import { storedPassFrames } from './stored-frames.js';
import { announcedUrl } from '../db/deployment-urls.js';
import type { Knex } from 'knex';

export interface RunSchedulerOptions {
  repos: Repositories;
  log: Logger;
  /** The MQTT URL dummies connect to; null: ask resolveMqttUrl at each run. */
  mqttUrl: string | null;
  /** The gateways' announced MQTT URL (db/deployment-urls.ts), asked when mqttUrl is null; none: the run fails so. */
  resolveMqttUrl?: () => Promise<string | null>;
  /** Frames of a pass the platform stored; a pass the broker acknowledged but the platform did not store fails the run. */
  storedFrames?: (deviceId: string, from: Date, to: Date) => Promise<number>;
  workerId?: string;
  /** ms between checks for new runs and stop requests. */ pollMs?: number;
  /** ms a lease lasts without renewal; a dead worker's runs are taken over after it. */ leaseMs?: number;
  /** ms between progress writes (and lease renewals). */ progressMs?: number;
  /** Runs one worker drives at once. */ maxRuns?: number;
  connectTimeoutMs?: number;
  /** ms a dummy's frames may lead the wall clock (lib/config.ts dummyMaxLeadMs). */ maxLeadMs?: number;
}

export interface RunScheduler {
  workerId: string;
  /** Runs this worker drives now. */ active(): number;
  /** False while its database statements fail. */ healthy(): boolean;
  /** Stops driving: each run sends its shutdown frame and is released for the next start. */
  close(): Promise<void>;
}

export const SCHEDULER_DEFAULTS = {
  pollMs: 500, leaseMs: 15_000, progressMs: 2000, maxRuns: 200, connectTimeoutMs: 30_000, maxLeadMs: configDefault('dummyMaxLeadMs'),
};

const rowProgress = (r: Run): RunProgress => ({
  repeatCount: r.repeatCount, lastSpeed: r.lastSpeed, remainingSeconds: 0, remainingMessages: r.remainingMessages ?? 0,
  framesSent: r.framesSent, distance: r.distance, driveMs: r.driveMs, nextPassAt: null, waitReason: null,
});

export function createRunScheduler(opts: RunSchedulerOptions): RunScheduler {
  const o = { ...SCHEDULER_DEFAULTS, ...opts, workerId: opts.workerId ?? `scheduler-${randomUUID()}` };
  const { repos, log, workerId } = o;
  const drivers = new Map<string, RunDriver>();
  let closed = false;
  let ok = true;
  let lastBeat = 0;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();

  const watchHeld = async () => {
    const states = await repos.runLeases.states([...drivers.keys()]);
    for (const [id, driver] of drivers) {
      const state = states.get(id);
      if (state === undefined) driver.stop('lost'); // deleted with its dummy
      else if (state === 'stopping' || state === 'finished') driver.stop('requested');
    }
    if (Date.now() - lastBeat < o.progressMs) return;
    lastBeat = Date.now();
    for (const driver of drivers.values()) await driver.heartbeat();
  };

  const adopt = async (run: ClaimedRun) => {
    if (run.state === 'stopping') {
      await repos.runLeases.finish(run.id, workerId, 'stopped', null, rowProgress(run));
      return;
    }
    log.info({ runId: run.id, dummyId: run.dummyId, takeover: run.previousState !== 'starting' }, 'driving run');
    const mqttUrl = o.mqttUrl ?? (await o.resolveMqttUrl?.()) ?? null;
    const driver = driveRun(run, {
      repos, log, mqttUrl, workerId, leaseMs: o.leaseMs, connectTimeoutMs: o.connectTimeoutMs, storedFrames: o.storedFrames, maxLeadMs: o.maxLeadMs,
    });
    drivers.set(run.id, driver);
    void driver.done.finally(() => drivers.delete(run.id));
  };

  const tick = async () => {
    try {
      await watchHeld();
      const room = o.maxRuns - drivers.size;
      if (room > 0 && !closed) for (const run of await repos.runLeases.claim(workerId, o.leaseMs, room)) await adopt(run);
      ok = true;
    } catch (err) {
      ok = false;
      log.warn({ err }, 'run scheduler tick failed');
    }
  };

  const loop = () => {
    if (closed) return;
    ticking = tick().finally(() => { if (!closed) timer = setTimeout(loop, o.pollMs); });
  };
  loop();

  return {
    workerId,
    active: () => drivers.size,
    healthy: () => ok,
    async close() {
      closed = true;
      clearTimeout(timer);
      await ticking;
      const running = [...drivers.values()];
      for (const driver of running) driver.stop('release');
      await Promise.all(running.map((d) => d.done));
    },
  };
}

/**
 * The MQTT URL dummies connect to: the setting, else the in-process gateway's; else null, and each run asks
 * for the URL the gateways announced in the database. Never a default port, which may be another broker's.
 */
export function simulatorMqttUrl(config: Config, started: { urls?: Record<string, string> }[]): string | null {
  if (config.simulatorMqttUrl) {
    if (!/^(mqtts?|wss?):\/\/[^/]+/.test(config.simulatorMqttUrl)) {
      throw new ConfigError([`--simulator-mqtt-url / DRIVEWIRE_SIMULATOR_MQTT_URL: "${config.simulatorMqttUrl}" is not an mqtt://, mqtts://, ws:// or wss:// URL`]);
    }
    return config.simulatorMqttUrl;
  }
  const gateway = started.find((p) => p.urls?.mqtt)?.urls?.mqtt;
  // A gateway listening on every interface (its URL says localhost) is reached over IPv4 loopback.
  if (gateway && ['0.0.0.0', '::'].includes(config.mqttHost)) return gateway.replace(/:\/\/[^/:]+:(\d+)/, '://127.0.0.1:$1');
  return gateway ?? null;
}

/** PART_STARTERS entry (bin/platform.ts): seeds the stored routes and starts the scheduler. */
export async function startRunScheduler(
  deps: { config: Config; repos: Repositories; log: Logger; db: { knex: Knex } },
  started: { urls?: Record<string, string> }[],
) {
  const mqttUrl = simulatorMqttUrl(deps.config, started);
  const { knex } = deps.db;
  await seedStoredRoutes(deps.repos.routes);
  const scheduler = createRunScheduler({
    repos: deps.repos, log: deps.log.child({ part: 'run-scheduler' }), mqttUrl, maxLeadMs: deps.config.dummyMaxLeadMs,
    resolveMqttUrl: () => announcedUrl(knex, 'mqtt'),
    storedFrames: (deviceId, from, to) => storedPassFrames(knex, deviceId, from, to),
  });
  deps.log.info({ mqttUrl: mqttUrl ?? 'announced by the gateways', workerId: scheduler.workerId }, 'run scheduler started');
  return {
    name: 'run-scheduler',
    close: () => scheduler.close(),
    health: async () => ({ runScheduler: scheduler.healthy() }),
  };
}
