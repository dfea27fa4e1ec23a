import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { hashSecret, newCaseId, newChipId, newSecret, secretMatches } from '../../lib/secrets.js';
import { NotFound } from '../../lib/errors.js';
import { offsetPage, type OffsetWindow } from '../paging.js';
import { LRUCache } from 'lru-cache';
import { isUuid } from '../../lib/uuid.js';
import { readableDeviceIds, type Principal } from './scope.js';
import { onAccessMayHaveEnded } from '../access-watch.js';
import { credentialsChanged } from '../device-credentials.js';

/**
 * How long a granted read stays cached (one round trip less per API request). Only grants
 * are cached, so a new authorization is seen at once; a revocation in this process clears the cache at
 * its commit, one by another process is seen within this time (as the live stream sees it, access-watch.ts).
 */
export const SCOPE_CACHE_MS = 1000;

/**
 * Granted reads of this process, keyed by application and device (random UUIDs, so repositories over
 * different databases in one process never meet). One cache and one subscription per process: a cache per
 * repository instance subscribed once per instance and was never released.
 */
const granted = new LRUCache<string, true>({ max: 100_000, ttl: SCOPE_CACHE_MS });
onAccessMayHaveEnded(() => granted.clear());

export interface Device {
  id: string; ownerId: string; name: string; chipId: string; caseId: string; icon: string | null; createdAt: Date;
}
/** Case ids drawn for one device at most (each draw is free with probability > 99.9% below 30,000 devices). */
const CASE_ID_ATTEMPTS = 8;
const COLUMNS = ['d.id', 'd.owner_id', 'd.name', 'd.chip_id', 'd.case_id', 'd.icon', 'd.created_at'];
interface DeviceRow {
  id: string; owner_id: string; name: string; chip_id: string; case_id: string; icon: string | null; created_at: Date;
}
const toDevice = (r: DeviceRow): Device => ({
  id: r.id, ownerId: r.owner_id, name: r.name, chipId: r.chip_id, caseId: r.case_id, icon: r.icon, createdAt: r.created_at,
});

export function devicesRepository(knex: Knex) {
  const readable = (app: Principal, trx: Knex) =>
    trx('devices as d').select(COLUMNS).whereIn('d.id', readableDeviceIds(trx, app));

  return {
    async createOwner(input: { name: string; email?: string | null }, trx: Knex = knex) {
      const row = { id: randomUUID(), name: input.name, email: input.email ?? null, created_at: new Date() };
      await trx('owners').insert(row);
      return { id: row.id, name: row.name, email: row.email, createdAt: row.created_at };
    },

    async ownerExists(id: string, trx: Knex = knex): Promise<boolean> {
      return Boolean(await trx('owners').where({ id }).first());
    },

    /**
     * Provisioning: the secret is returned once and only its hash is kept. The case id is drawn at random
     * (`caseId`, when given, is tried first); one already taken is drawn again: 33^5 ids make a collision likely
     * once a fleet has several thousand devices.
     */
    async provision(input: { id?: string; name: string; ownerId: string; chipId?: string; caseId?: string; icon?: string | null }, trx: Knex = knex) {
      const secret = newSecret();
      const row = {
        id: input.id ?? randomUUID(), owner_id: input.ownerId, name: input.name, chip_id: input.chipId ?? newChipId(),
        case_id: input.caseId ?? newCaseId(), icon: input.icon ?? null, secret_hash: hashSecret(secret), created_at: new Date(),
      };
      for (let attempt = 1; ; attempt++) {
        // ON CONFLICT on the case id alone: a clash there never aborts the caller's transaction
        const inserted = await trx('devices').insert(row).onConflict('case_id').ignore().returning('id');
        if (inserted.length) return { device: toDevice(row), secret };
        if (attempt === CASE_ID_ATTEMPTS) throw new Error(`no free case id after ${CASE_ID_ATTEMPTS} draws`);
        row.case_id = newCaseId();
      }
    },

    async exists(id: string, trx: Knex = knex): Promise<boolean> {
      return Boolean(await trx('devices').where({ id }).first());
    },

    async getAny(id: string, trx: Knex = knex): Promise<Device | undefined> {
      const row = await trx('devices as d').select(COLUMNS).where('d.id', id).first();
      return row && toDevice(row);
    },

    /** A new secret; the device's live MQTT sessions are closed on every gateway once `trx` commits. */
    async rotateSecret(id: string, trx: Knex = knex): Promise<string> {
      const secret = newSecret();
      await trx('devices').where({ id }).update({ secret_hash: hashSecret(secret) });
      await credentialsChanged(trx, id);
      return secret;
    },

    /** MQTT CONNECT: username = device id, password = secret. */
    async authenticate(id: string, secret: string, trx: Knex = knex): Promise<boolean> {
      return (await this.credentials(id, secret, trx)) !== null;
    },

    /**
     * MQTT CONNECT: the stored hash when the secret is the device's (null otherwise), which the gateway keeps to
     * tell later whether the session's credentials still hold (gateway/credentials-watch.ts).
     */
    async credentials(id: string, secret: string, trx: Knex = knex): Promise<string | null> {
      if (!isUuid(id)) return null;
      const row = await trx('devices').select('secret_hash').where({ id }).first();
      return row && secretMatches(secret, row.secret_hash) ? row.secret_hash as string : null;
    },

    async get(app: Principal, id: string, trx: Knex = knex): Promise<Device | undefined> {
      const row = await readable(app, trx).where('d.id', id).first();
      return row && toDevice(row);
    },

    async canRead(app: Principal, id: string, trx: Knex = knex): Promise<boolean> {
      const key = `${app.id}:${app.kind}:${id}`;
      if (trx === knex && granted.has(key)) return true;
      const ok = Boolean(await readableDeviceIds(trx, app).where('a.device_id', id).first());
      if (ok && trx === knex) granted.set(key, true);
      return ok;
    },

    /** Throws NotFound unless the application may read the device (another's device is a 404, not a 403). */
    async requireReadable(app: Principal, id: string, trx: Knex = knex): Promise<void> {
      if (!(await this.canRead(app, id, trx))) throw new NotFound();
    },

    /** Devices of the application in the order they were added to it. */
    async list(app: Principal, w: OffsetWindow, trx: Knex = knex) {
      const added = app.kind === 'enterprise' ? 'registrations' : 'authorizations';
      const base = () => trx('devices as d').select([...COLUMNS, 'x.created_at as added_at'])
        .join(`${added} as x`, 'x.device_id', 'd.id').where('x.application_id', app.id)
        .whereIn('d.id', readableDeviceIds(trx, app));
      const page = await offsetPage<DeviceRow>(base, [{ column: 'x.created_at', order: 'asc' }, { column: 'd.id', order: 'asc' }], w);
      return { total: page.total, devices: page.rows.map(toDevice) };
    },

    async isAuthorized(applicationId: string, deviceId: string, trx: Knex = knex): Promise<boolean> {
      return Boolean(await trx('authorizations').where({ application_id: applicationId, device_id: deviceId }).first());
    },

    async authorize(deviceId: string, applicationId: string, trx: Knex = knex): Promise<Date> {
      const device = await trx('devices').select('owner_id').where({ id: deviceId }).first();
      const row = { device_id: deviceId, application_id: applicationId, owner_id: device.owner_id, created_at: new Date() };
      await trx('authorizations').insert(row).onConflict(['device_id', 'application_id']).ignore();
      return row.created_at;
    },

    async revoke(deviceId: string, applicationId: string, trx: Knex = knex): Promise<number> {
      return trx('authorizations').where({ device_id: deviceId, application_id: applicationId }).delete();
    },

    async isRegistered(applicationId: string, deviceId: string, trx: Knex = knex): Promise<boolean> {
      return Boolean(await trx('registrations').where({ application_id: applicationId, device_id: deviceId }).first());
    },

    async register(applicationId: string, deviceId: string, trx: Knex = knex): Promise<void> {
      await trx('registrations').insert({ application_id: applicationId, device_id: deviceId, created_at: new Date() })
        .onConflict(['application_id', 'device_id']).ignore();
    },

    async deregister(applicationId: string, deviceId: string, trx: Knex = knex): Promise<number> {
      return trx('registrations').where({ application_id: applicationId, device_id: deviceId }).delete();
    },

    async listAll(trx: Knex = knex): Promise<Device[]> {
      return (await trx('devices as d').select(COLUMNS).orderBy('d.created_at')).map(toDevice);
    },
  };
}
export type DevicesRepository = ReturnType<typeof devicesRepository>;
