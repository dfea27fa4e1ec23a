import type { LinkBuilder } from '../../context.js';
import type { Dummy } from '../../../db/repositories/dummies.repository.js';
import type { RouteRecord } from '../../../db/repositories/routes.repository.js';
import type { Run } from '../../../db/repositories/runs.repository.js';
import { iso } from '../../../lib/time.js';

/** Route: metadata, the polyline as `preview`. */
export function presentRoute(links: LinkBuilder, r: RouteRecord) {
  return {
    id: r.id, name: r.name, description: r.description, messageCount: r.messageCount, locationCount: r.locationCount,
    distanceByGPS: r.distanceByGPS, distanceByVSS: r.distanceByVSS, duration: r.duration, preview: r.polyline,
    links: { self: links.url('dummy', `/api/v1/routes/${r.id}`) },
  };
}

/** Dummy. */
export function presentDummy(links: LinkBuilder, d: Dummy) {
  return {
    id: d.id, name: d.name, deviceId: d.deviceId, caseId: d.caseId, createdAt: iso(d.createdAt)!,
    links: {
      self: links.url('dummy', `/api/v1/dummies/${d.id}`),
      runs: links.url('dummy', `/api/v1/dummies/${d.id}/runs`),
      device: links.url('platform', `/api/v1/devices/${d.deviceId}`),
      messages: links.url('telemetry', `/api/v1/devices/${d.deviceId}/messages`),
      events: links.url('event', `/api/v1/devices/${d.deviceId}/events`),
    },
  };
}

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;

/** Seconds left as of now: the scheduler reports every few seconds, the figure counts down in between. */
function remainingSeconds(run: Run, now: number): number | null {
  if (run.remainingSeconds === null) return null;
  if (run.state === 'finished') return 0;
  const elapsed = run.progressAt ? (now - new Date(run.progressAt).getTime()) / 1000 : 0;
  return round(Math.max(0, run.remainingSeconds - Math.max(0, elapsed)), 3);
}

/** Run; `links.self` is the `_current` URL while the run is active. */
export function presentRun(links: LinkBuilder, run: Run, now = Date.now()) {
  const base = `/api/v1/dummies/${run.dummyId}/runs`;
  const byId = links.url('dummy', `${base}/${run.id}`);
  return {
    id: run.id,
    status: {
      routeId: run.routeId, repeat: run.repeat, state: run.state, repeatCount: run.repeatCount,
      lastSpeed: run.lastSpeed === null ? null : round(run.lastSpeed, 1), remainingSeconds: remainingSeconds(run, now),
      remainingMessages: run.remainingMessages, speed: run.speed, scenarios: run.scenarios, vin: run.vin,
      framesSent: run.framesSent, distance: round(run.distance, 1), duration: Math.round(run.driveMs),
      nextPassAt: run.state === 'finished' ? null : iso(run.nextPassAt),
      waitReason: run.state === 'finished' || !run.nextPassAt ? null : run.waitReason, outcome: run.outcome, error: run.error,
      createdAt: iso(run.createdAt)!, startedAt: iso(run.startedAt), endedAt: iso(run.endedAt),
    },
    links: {
      self: run.state === 'finished' ? byId : links.url('dummy', `${base}/_current`),
      run: byId,
      dummy: links.url('dummy', `/api/v1/dummies/${run.dummyId}`),
      route: links.url('dummy', `/api/v1/routes/${run.routeId}`),
    },
  };
}
