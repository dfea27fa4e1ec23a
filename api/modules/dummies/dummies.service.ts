import type { Db, Principal, Repositories } from '../../../db/index.js';
import { deregisterDevice } from '../../../db/deregistration.js';
import type { Dummy } from '../../../db/repositories/dummies.repository.js';
import type { Run } from '../../../db/repositories/runs.repository.js';
import { Conflict, NotFound, ValidationError } from '../../../lib/errors.js';
import {
  estimateRun, leadProblem, passWait, RUN_INTERVAL_MS, scenariosOrProblem, speedProblem, vinProblem,
} from '../../../simulator/runs.js';
import { configDefault, type Config } from '../../../lib/config.js';

/** Dummies one application may have at once (docs/reference/limits.md). */
export const MAX_DUMMIES = 5;

/** `config` defaults to the settings' defaults. */
interface Deps { db: Db; repos: Repositories; config?: Pick<Config, 'dummyMaxLeadMs'> }

/**
 * Creates a dummy: a real device (its own owner), authorized for the calling application and, for
 * an Enterprise application, registered with it. The device's MQTT secret stays in the dummy row
 * for the run scheduler. The application row is locked so that two calls cannot pass the limit.
 */
export async function createDummy({ db, repos }: Deps, app: Principal, rawName: string): Promise<Dummy> {
  const name = rawName.trim();
  if (!name) throw new ValidationError('dummy.name must not be blank');
  return db.knex.transaction(async (trx) => {
    await repos.dummies.lockApplication(app.id, trx);
    if ((await repos.dummies.count(app.id, trx)) >= MAX_DUMMIES) {
      throw new Conflict(`An application may have at most ${MAX_DUMMIES} dummies; delete one first`);
    }
    if (await repos.dummies.nameTaken(app.id, name, trx)) throw new Conflict(`A dummy named "${name}" already exists`);
    const owner = await repos.devices.createOwner({ name: `drivewire dummies (application ${app.id})` }, trx);
    const { device, secret } = await repos.devices.provision({ name, ownerId: owner.id }, trx);
    await repos.devices.authorize(device.id, app.id, trx);
    if (app.kind === 'enterprise') await repos.devices.register(app.id, device.id, trx);
    return repos.dummies.insert({ applicationId: app.id, deviceId: device.id, name, deviceSecret: secret }, trx);
  });
}

/**
 * Deletes a dummy: its run ends (the runs go with the row; the scheduler stops the device within
 * a second), the application loses the device (deregistered, authorization revoked) and the
 * device's secret is replaced and forgotten, so the device cannot be reclaimed.
 */
export async function deleteDummy({ db, repos }: Deps, app: Principal, id: string): Promise<void> {
  await db.knex.transaction(async (trx) => {
    const dummy = await repos.dummies.get(app.id, id, trx);
    if (!dummy) throw new NotFound('Dummy not found');
    await repos.dummies.delete(app.id, id, trx);
    await deregisterDevice(trx, app.id, dummy.deviceId);
    await repos.devices.revoke(dummy.deviceId, app.id, trx);
    await repos.devices.rotateSecret(dummy.deviceId, trx);
  });
}

export async function mustDummy({ repos }: Deps, app: Principal, id: string): Promise<Dummy> {
  const dummy = await repos.dummies.get(app.id, id);
  if (!dummy) throw new NotFound('Dummy not found');
  return dummy;
}

export interface StartRunInput { vin: string; routeId: string; repeat?: boolean; speed?: number; scenarios?: string[] }

/** Validates and records a run in state `starting`; the run scheduler (workers) drives it. */
export async function startRun(deps: Deps, app: Principal, dummyId: string, input: StartRunInput): Promise<Run> {
  const { repos } = deps;
  const dummy = await mustDummy(deps, app, dummyId);
  const speed = input.speed ?? 1;
  const parsed = scenariosOrProblem(input.scenarios ?? []);
  const problem = vinProblem(input.vin) ?? speedProblem(speed) ?? ('problem' in parsed ? parsed.problem : undefined);
  if (problem) throw new ValidationError(problem);
  const scenarios = 'scenarios' in parsed ? parsed.scenarios : [];
  const route = await repos.routes.get(app.id, input.routeId);
  if (!route) throw new NotFound(`Route ${input.routeId} not found`);
  const { framesTotal, driveMs } = estimateRun(route, { scenarios, intervalMs: RUN_INTERVAL_MS });
  const maxLeadMs = deps.config?.dummyMaxLeadMs ?? configDefault('dummyMaxLeadMs');
  const tooFast = leadProblem(driveMs, speed, maxLeadMs);
  if (tooFast) throw new ValidationError(tooFast);
  const device = await repos.dummies.device(dummy.id);
  const wait = passWait(device?.lastFrameAt ?? null, driveMs, speed, maxLeadMs);
  const run = await repos.runs.create({
    dummyId: dummy.id, routeId: route.id, vin: input.vin, repeat: input.repeat ?? false, speed, scenarios,
    intervalMs: RUN_INTERVAL_MS, remainingSeconds: (wait.waitMs + driveMs / speed) / 1000, remainingMessages: framesTotal,
    nextPassAt: wait.waitMs > 0 ? new Date(Date.now() + wait.waitMs) : null, waitReason: wait.reason,
  });
  if (!run) throw new Conflict(`Dummy "${dummy.name}" already has an active run; stop it first (DELETE /api/v1/dummies/${dummy.id}/runs/_current)`);
  return run;
}
