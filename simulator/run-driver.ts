// Drives one leased run: stamps each pass on the dummy's clock (clock.ts), waiting only when that would lead
// real time by more than the gateway accepts, plays the route with a real MQTT device, repeats when asked, and
// records the outcome. The scheduler owns the lease and the
// polling; a driver only reports progress when asked (heartbeat) and stops when told.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../db/index.js';
import type { DummyDevice } from '../db/repositories/dummies.repository.js';
import type { ClaimedRun } from '../db/repositories/run-leases.repository.js';
import type { RunOutcome, RunProgress } from '../db/repositories/runs.repository.js';
import type { Logger } from '../lib/logger.js';
import { startDevice, type DeviceHandle } from './device.js';
import { estimateRun, leadProblem, passWait, type PassWait, type RunEstimate } from './runs.js';
import type { StoredRoute } from './route.js';
import type { Scenario } from './scenarios.js';
import { sleepUntil } from '../lib/sleep.js';

/** requested: the run was asked to stop; lost: another worker holds it or it is gone; release: shutdown. */
export type StopReason = 'requested' | 'lost' | 'release';

export interface DriverDeps {
  repos: Repositories;
  log: Logger;
  /** null when no gateway is known: the run fails with a message saying so. */ mqttUrl: string | null;
  workerId: string;
  leaseMs: number;
  connectTimeoutMs: number;
  /** ms a dummy's frames may lead the wall clock (lib/config.ts dummyMaxLeadMs). */ maxLeadMs: number;
  /** Frames of a pass the platform stored (stored-frames.ts); without it a pass is not checked. */
  storedFrames?: (deviceId: string, from: Date, to: Date) => Promise<number>;
}

export interface RunDriver {
  done: Promise<void>;
  stop(reason: StopReason): void;
  /** Renews the lease and writes progress; false when the lease is lost. */
  heartbeat(): Promise<boolean>;
}

export const NO_GATEWAY = 'no MQTT gateway to connect to: no gateway has announced its MQTT URL in the database; start one (drivewire serve --only gateway) or set --simulator-mqtt-url / DRIVEWIRE_SIMULATOR_MQTT_URL';

/** Why a pass acknowledged by the broker does not count: the frames are not in the platform's database. */
export const notStored = (url: string, sent: number, stored: number) =>
  `the broker at ${url} acknowledged ${sent} frames but the platform stored ${stored}: it is not this platform's gateway `
  + '(set --simulator-mqtt-url, or --mqtt-public-url on the gateways)';

export function driveRun(run: ClaimedRun, deps: DriverDeps): RunDriver {
  const { repos, log, workerId } = deps;
  const abort = new AbortController();
  let reason: StopReason | null = null;
  let device: DeviceHandle | null = null;
  let estimate: RunEstimate | null = null;
  let waitUntil = Date.now();
  let waitReason: string | null = null;
  let lastSpeed = run.lastSpeed;
  let repeatCount = run.repeatCount;
  const totals = { framesSent: run.framesSent, distance: run.distance, driveMs: run.driveMs };

  /** Frames left when the run ended (0 when completed). */
  let leftover: number | null = null;

  const progress = (): RunProgress => {
    const base = { repeatCount, ...totals, lastSpeed, nextPassAt: null, waitReason: null };
    if (leftover !== null) return { ...base, remainingSeconds: 0, remainingMessages: leftover };
    if (!estimate) return { ...base, remainingSeconds: run.remainingSeconds ?? 0, remainingMessages: run.remainingMessages ?? 0 };
    const p = device?.progress();
    if (!p) {
      const wait = Math.max(0, waitUntil - Date.now());
      return {
        ...base, remainingSeconds: (wait + estimate.driveMs / run.speed) / 1000, remainingMessages: estimate.framesTotal,
        nextPassAt: wait > 0 ? new Date(waitUntil) : null, waitReason: wait > 0 ? waitReason : null,
      };
    }
    if (p.framesSent > 0) lastSpeed = p.lastSpeed;
    const passDriveMs = Math.max(0, estimate.driveMs - p.remainingSeconds * 1000 * run.speed);
    return {
      repeatCount, lastSpeed, nextPassAt: null, waitReason: null, remainingSeconds: p.remainingSeconds, remainingMessages: p.framesTotal - p.framesSent,
      framesSent: totals.framesSent + p.framesSent, distance: totals.distance + p.distance, driveMs: totals.driveMs + passDriveMs,
    };
  };

  const stop = (why: StopReason) => {
    if (reason) return;
    reason = why;
    abort.abort();
    device?.stop().catch(() => undefined); // its failure is reported by playPasses
  };

  /** Renews the lease with the progress; a lost lease stops the run here. */
  const report = async (): Promise<boolean> => {
    if (reason) return true;
    const held = await repos.runLeases.renew(run.id, workerId, deps.leaseMs, progress());
    if (!held) stop('lost');
    return held;
  };

  /** One pass over the route; resolves with the summary once every frame is acknowledged. */
  const playPass = async (dummy: DummyDevice, route: StoredRoute, scenarios: Scenario[], startTs: number) => {
    const passId = randomUUID();
    // The pass's stamps are taken before its first frame is sent: a worker that dies mid-pass leaves them taken,
    // and the pass that replays the run starts after them.
    await repos.dummies.recordLastFrame(run.dummyId, new Date(startTs + estimate!.driveMs));
    device = startDevice({
      mqttUrl: deps.mqttUrl!, deviceId: dummy.deviceId, secret: dummy.secret, route, vin: run.vin, speed: run.speed,
      scenarios, intervalMs: run.intervalMs, runId: passId, connectTimeoutMs: deps.connectTimeoutMs, logger: log, startTs,
    });
    device.done.catch(() => undefined); // a refused connection is thrown by the await below, not left unhandled meanwhile
    await repos.runLeases.markRunning(run.id, workerId);
    await report();
    const summary = await device.done;
    const last = device.progress();
    device = null;
    lastSpeed = last.lastSpeed;
    Object.assign(totals, {
      framesSent: totals.framesSent + summary.framesSent, distance: totals.distance + summary.distance, driveMs: totals.driveMs + summary.duration,
    });
    if (summary.lastTs !== null) await repos.dummies.recordLastFrame(run.dummyId, new Date(summary.lastTs));
    if (deps.storedFrames && summary.framesSent > 0 && !reason) {
      const stored = await deps.storedFrames(dummy.deviceId, new Date(startTs), new Date(summary.lastTs ?? startTs));
      if (stored < summary.framesSent) throw new Error(notStored(deps.mqttUrl!, summary.framesSent, stored));
    }
    return { lastTs: Math.max(summary.lastTs ?? startTs, startTs + estimate!.driveMs), left: last.framesTotal - last.framesSent };
  };

  const playPasses = async (): Promise<void> => {
    const dummy = await repos.dummies.device(run.dummyId);
    const route = await repos.routes.getAny(run.routeId);
    if (!dummy || !route) return;
    if (!deps.mqttUrl) throw new Error(NO_GATEWAY);
    const scenarios = run.scenarios as Scenario[];
    estimate = estimateRun(route, { scenarios, intervalMs: run.intervalMs });
    const tooFast = leadProblem(estimate.driveMs, run.speed, deps.maxLeadMs);
    if (tooFast) throw new Error(tooFast);
    // Stamps a worker that died mid-pass may have sent are in lastFrameAt: each pass takes its stamps before it starts.
    let lastStamp = dummy.lastFrameAt;
    for (;;) {
      let wait: PassWait = passWait(lastStamp, estimate.driveMs, run.speed, deps.maxLeadMs);
      waitUntil = Date.now() + wait.waitMs;
      waitReason = wait.reason;
      if (wait.waitMs > 0) await report();
      await sleepUntil(waitUntil, abort.signal);
      if (reason) return;
      wait = passWait(lastStamp, estimate.driveMs, run.speed, deps.maxLeadMs);
      waitReason = null;
      const pass = await playPass(dummy, route as StoredRoute, scenarios, wait.startTs);
      lastStamp = pass.lastTs;
      if (reason || !run.repeat) {
        leftover = pass.left;
        return;
      }
      repeatCount += 1;
      await report();
    }
  };

  const settle = async (outcome: RunOutcome, error: string | null): Promise<void> => {
    if (reason === 'lost') return;
    if (reason === 'release') return repos.runLeases.release(run.id, workerId, progress());
    await repos.runLeases.finish(run.id, workerId, reason === 'requested' ? 'stopped' : outcome, error, { ...progress(), remainingSeconds: 0 });
  };

  const done = playPasses().then(
    () => settle('completed', null),
    (err: Error) => {
      log.warn({ err, runId: run.id, dummyId: run.dummyId }, 'run failed');
      return settle('failed', err.message);
    },
  ).catch((err: unknown) => log.error({ err, runId: run.id }, 'could not record the end of a run'));

  return { done, stop, heartbeat: report };
}

