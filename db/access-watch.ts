import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import type { Principal } from './repositories/scope.js';

/**
 * Long-lived readers (the live WebSocket stream) must stop the moment an application loses a device:
 * authorization revoked, registration ended, device deleted. A watcher re-checks
 * every watched (application, device) pair in ONE statement per tick while any is watched, so it
 * also sees changes made by other processes; in this process a revocation (db/deregistration.ts)
 * signals it to check at once after its commit.
 */
const changes = new EventEmitter();
changes.setMaxListeners(0);

/** Tells this process's watchers that an application's access to a device may have ended. */
export function accessMayHaveEnded(): void {
  changes.emit('change');
}

/** Calls `fn` after any in-process change that may end an application's access to a device; returns an unsubscribe. */
export function onAccessMayHaveEnded(fn: () => void): () => void {
  changes.on('change', fn);
  return () => { changes.off('change', fn); };
}

/** Default re-check period (ms): a revocation by another process ends the stream well within a second. */
export const ACCESS_CHECK_MS = 250;

interface Watch { app: Principal; deviceId: string; lost: Set<() => void> }

/**
 * The watched pairs that are no longer readable, with the rule of readableDeviceIds (scope.ts): an
 * authorization, and for an Enterprise application also a registration.
 */
const LOST_SQL = `
  SELECT w.app_id, w.device_id
    FROM unnest(?::uuid[], ?::text[], ?::uuid[]) AS w(app_id, kind, device_id)
   WHERE NOT EXISTS (SELECT 1 FROM authorizations a WHERE a.application_id = w.app_id AND a.device_id = w.device_id)
      OR (w.kind = 'enterprise'
          AND NOT EXISTS (SELECT 1 FROM registrations r WHERE r.application_id = w.app_id AND r.device_id = w.device_id))`;

export function createAccessWatcher(knex: Knex, intervalMs = ACCESS_CHECK_MS, onError: (err: unknown) => void = () => {}) {
  const watches = new Map<string, Watch>();
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let again = false;
  let closed = false;

  async function check(): Promise<void> {
    const list = [...watches.values()];
    if (!list.length) return;
    const { rows } = await knex.raw(LOST_SQL, [list.map((w) => w.app.id), list.map((w) => w.app.kind), list.map((w) => w.deviceId)]);
    for (const r of rows as { app_id: string; device_id: string }[]) {
      const key = `${r.app_id}:${r.device_id}`;
      const w = watches.get(key);
      watches.delete(key);
      for (const fn of w?.lost ?? []) fn();
    }
  }

  /** Runs a check now, or once more right after the one in progress. */
  function checkSoon(): void {
    if (closed) return;
    if (running) { again = true; return; }
    running = check().catch(onError).finally(() => {
      running = null;
      if (again) { again = false; checkSoon(); }
    });
  }

  const tick = () => { checkSoon(); };
  const onChange = () => { if (watches.size) checkSoon(); };
  changes.on('change', onChange);

  return {
    /** Calls `lost` once when the application can no longer read the device; returns an unwatch function. */
    watch(app: Principal, deviceId: string, lost: () => void): () => void {
      const key = `${app.id}:${deviceId}`;
      const w = watches.get(key) ?? { app, deviceId, lost: new Set() };
      w.lost.add(lost);
      watches.set(key, w);
      if (!timer) { timer = setInterval(tick, intervalMs); timer.unref(); }
      return () => {
        w.lost.delete(lost);
        if (!w.lost.size && watches.get(key) === w) watches.delete(key);
        if (!watches.size && timer) { clearInterval(timer); timer = null; }
      };
    },
    /** Stops checking; resolves once the check in flight, if any, has ended (the pool may close after it). */
    async close(): Promise<void> {
      closed = true;
      changes.off('change', onChange);
      if (timer) clearInterval(timer);
      timer = null;
      watches.clear();
      await running;
    },
  };
}
export type AccessWatcher = ReturnType<typeof createAccessWatcher>;
