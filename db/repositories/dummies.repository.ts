import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { offsetPage, type OffsetWindow } from '../paging.js';

/** A dummy (docs/concepts/simulator.md): a simulated device of one application. */
export interface Dummy {
  id: string;
  applicationId: string;
  deviceId: string;
  name: string;
  caseId: string;
  createdAt: Date;
}

/** What the run scheduler needs to connect as the dummy's device. */
export interface DummyDevice {
  id: string;
  deviceId: string;
  /** The device's MQTT secret: dummies are the platform's own clients, so it is kept. */ secret: string;
  /** Latest frame stamp the dummy has sent (epoch ms), or null. */ lastFrameAt: number | null;
}

const COLUMNS = ['m.id', 'm.application_id', 'm.device_id', 'm.name', 'd.case_id', 'm.created_at'];
interface DummyRow { id: string; application_id: string; device_id: string; name: string; case_id: string; created_at: Date }
const toDummy = (r: DummyRow): Dummy => ({
  id: r.id, applicationId: r.application_id, deviceId: r.device_id, name: r.name, caseId: r.case_id, createdAt: r.created_at,
});

export function dummiesRepository(knex: Knex) {
  const own = (trx: Knex, applicationId: string) =>
    trx('dummies as m').select(COLUMNS).join('devices as d', 'd.id', 'm.device_id').where('m.application_id', applicationId);

  return {
    /** Serializes dummy creation per application (the 5-dummy limit) until the transaction ends. */
    async lockApplication(applicationId: string, trx: Knex): Promise<void> {
      await trx('applications').select('id').where({ id: applicationId }).forUpdate();
    },

    async count(applicationId: string, trx: Knex = knex): Promise<number> {
      const [{ n }] = await trx('dummies').where({ application_id: applicationId }).count({ n: '*' });
      return Number(n);
    },

    async nameTaken(applicationId: string, name: string, trx: Knex = knex): Promise<boolean> {
      return Boolean(await trx('dummies').where({ application_id: applicationId, name }).first('id'));
    },

    async insert(input: { applicationId: string; deviceId: string; name: string; deviceSecret: string }, trx: Knex = knex): Promise<Dummy> {
      const row = {
        id: randomUUID(), application_id: input.applicationId, device_id: input.deviceId, name: input.name,
        device_secret: input.deviceSecret, created_at: new Date(),
      };
      await trx('dummies').insert(row);
      return (await own(trx, input.applicationId).andWhere('m.id', row.id).first().then(toDummy));
    },

    /** The application's dummy, or undefined (another application's dummy is not found). */
    async get(applicationId: string, id: string, trx: Knex = knex): Promise<Dummy | undefined> {
      const row = await own(trx, applicationId).andWhere('m.id', id).first();
      return row && toDummy(row);
    },

    /** The application's dummies in the order they were created. */
    async list(applicationId: string, w: OffsetWindow, trx: Knex = knex) {
      const page = await offsetPage<DummyRow>(() => own(trx, applicationId),
        [{ column: 'm.created_at', order: 'asc' }, { column: 'm.id', order: 'asc' }], w);
      return { total: page.total, dummies: page.rows.map(toDummy) };
    },

    /** Deletes the row; its runs go with it (ON DELETE CASCADE), which tells the scheduler to stop. */
    async delete(applicationId: string, id: string, trx: Knex = knex): Promise<number> {
      return trx('dummies').where({ application_id: applicationId, id }).delete();
    },

    async device(id: string, trx: Knex = knex): Promise<DummyDevice | undefined> {
      const row = await trx('dummies').select('id', 'device_id', 'device_secret', 'last_frame_at').where({ id }).first();
      return row && {
        id: row.id, deviceId: row.device_id, secret: row.device_secret,
        lastFrameAt: row.last_frame_at ? new Date(row.last_frame_at).getTime() : null,
      };
    },

    /** True when the device is a dummy's (the gateway lets its frames be stamped ahead). */
    async isDevice(deviceId: string, trx: Knex = knex): Promise<boolean> {
      return Boolean(await trx('dummies').where({ device_id: deviceId }).first('id'));
    },

    /** Moves `last_frame_at` forward (never back). */
    async recordLastFrame(id: string, at: Date, trx: Knex = knex): Promise<void> {
      await trx('dummies').where({ id }).update({
        last_frame_at: trx.raw('greatest(coalesce(last_frame_at, ?::timestamptz), ?::timestamptz)', [at, at]),
      });
    },
  };
}
export type DummiesRepository = ReturnType<typeof dummiesRepository>;
