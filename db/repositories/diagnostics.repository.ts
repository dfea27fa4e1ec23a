import type { Knex } from 'knex';
import { streamPage, type StreamWindow } from '../paging.js';
import { readableDeviceIds, type Principal } from './scope.js';
import type { BatteryKind, TimedReading } from '../diagnostics/battery.js';

export type CodeState = 'active' | 'inactive' | 'all';

export interface DtcCode { id: string; number: string; make: string; system: string; subsystem: string; description: string }
export interface DtcOccurrence {
  id: string; deviceId: string; vehicleId: string | null; codeId: string; number: string; description: string;
  start: Date; stop: Date | null;
}

type DtcCodeRow = DtcCode;
const toCode = (r: DtcCodeRow): DtcCode => ({
  id: r.id, number: r.number, make: r.make, system: r.system, subsystem: r.subsystem, description: r.description,
});
interface DtcOccurrenceRow {
  id: string; device_id: string; vehicle_id: string | null; code_id: string; number: string; description: string;
  start: Date | string; stop: Date | string | null;
}
const toOccurrence = (r: DtcOccurrenceRow): DtcOccurrence => ({
  id: r.id, deviceId: r.device_id, vehicleId: r.vehicle_id, codeId: r.code_id, number: r.number,
  description: r.description, start: new Date(r.start), stop: r.stop ? new Date(r.stop) : null,
});

/** Reading trouble codes and battery readings; a vehicle's data comes from the devices the application can read. */
export function diagnosticsRepository(knex: Knex) {
  return {
    /** A trouble-code record: reference data, the same for every application. */
    async getCode(id: string, trx: Knex = knex): Promise<DtcCode | undefined> {
      const row = await trx('dtc_codes').select('id', 'number', 'make', 'system', 'subsystem', 'description').where('id', id).first();
      return row && toCode(row);
    },

    /** Occurrences of a vehicle, newest start first; active = still on (stop null), inactive = resolved. */
    async listForVehicle(app: Principal, vehicleId: string, state: CodeState, w: StreamWindow, trx: Knex = knex) {
      const base = () => {
        const q = trx('dtc_occurrences as o').join('dtc_codes as c', 'c.id', 'o.code_id')
          .select('o.id', 'o.device_id', 'o.vehicle_id', 'o.code_id', 'o.number', 'c.description', 'o.start', 'o.stop')
          .where('o.vehicle_id', vehicleId).whereIn('o.device_id', readableDeviceIds(trx, app));
        if (state === 'active') q.whereNull('o.stop');
        if (state === 'inactive') q.whereNotNull('o.stop');
        return q;
      };
      const page = await streamPage<DtcOccurrenceRow>(base, 'o.start', w, 'o.id');
      return { remaining: page.remaining, prior: page.prior, newest: page.newest, codes: page.rows.map(toOccurrence) };
    },

    /** The newest reading of each kind for the vehicle, over the devices the application can read. */
    async latestReadings(app: Principal, vehicleId: string, trx: Knex = knex): Promise<TimedReading[]> {
      const rows = await trx('battery_readings').distinctOn('kind').select('kind', 'volts', 'ts')
        .where('vehicle_id', vehicleId).whereIn('device_id', readableDeviceIds(trx, app))
        .orderBy([{ column: 'kind' }, { column: 'ts', order: 'desc' }]);
      return rows.map((r: { kind: BatteryKind; volts: number | string; ts: Date | string }) => ({ kind: r.kind, volts: Number(r.volts), ts: new Date(r.ts) }));
    },
  };
}
export type DiagnosticsRepository = ReturnType<typeof diagnosticsRepository>;
