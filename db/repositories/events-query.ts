import type { Knex } from 'knex';
import { streamPage, type StreamWindow } from '../paging.js';
import { readableDeviceIds, type Principal } from './scope.js';
import { EVENT_COLUMNS, toEvent, type EventRecord, type EventRow } from './events.repository.js';

export interface EventFilters {
  /** An event type; `rule` and `<prefix>-*` are wildcards. */
  type?: string;
  objectId?: string;
  objectType?: string;
}

export const RULE_EVENT_TYPES = ['rule-enter', 'rule-leave'];

const COLUMNS = EVENT_COLUMNS.map((c) => `e.${c}`);

/** `rule` and `rule-*` both mean every rule event; another `<prefix>-*` matches its prefix. */
function whereType(q: Knex.QueryBuilder, type: string): Knex.QueryBuilder {
  if (type === 'rule' || type === 'rule-*') return q.whereIn('e.event_type', RULE_EVENT_TYPES);
  if (type.endsWith('-*')) return q.whereLike('e.event_type', `${type.slice(0, -1).replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  return q.where('e.event_type', type);
}

function filtered(q: Knex.QueryBuilder, f: EventFilters): Knex.QueryBuilder {
  if (f.type) whereType(q, f.type);
  if (f.objectId) q.where('e.object_id', f.objectId);
  if (f.objectType) q.where('e.object_type', f.objectType);
  return q;
}

/**
 * Reading events. An application sees the events of devices it can read; a rule
 * event only when it owns the rule (`application_id` null = an event every reader of the device sees).
 */
export function eventsQueryRepository(knex: Knex) {
  const visible = (trx: Knex, app: Principal) => trx('events as e').select(COLUMNS)
    .whereIn('e.device_id', readableDeviceIds(trx, app))
    .where((q) => q.whereNull('e.application_id').orWhere('e.application_id', app.id));

  const page = async (base: () => Knex.QueryBuilder, w: StreamWindow) => {
    const p = await streamPage<EventRow>(base, 'e.ts', w, 'e.id');
    return { remaining: p.remaining, prior: p.prior, newest: p.newest, events: p.rows.map(toEvent) };
  };

  return {
    /** A device's events, newest first (stream pagination). */
    async listForDevice(app: Principal, deviceId: string, f: EventFilters, w: StreamWindow, trx: Knex = knex) {
      return page(() => filtered(visible(trx, app).where('e.device_id', deviceId), f), w);
    },

    /** Events of a vehicle from the devices of it the application can read, newest first. */
    async listForVehicle(app: Principal, vehicleId: string, f: EventFilters, w: StreamWindow, trx: Knex = knex) {
      return page(() => filtered(visible(trx, app).where('e.vehicle_id', vehicleId), f), w);
    },

    async get(app: Principal, id: string, trx: Knex = knex): Promise<EventRecord | undefined> {
      const row = await visible(trx, app).where('e.id', id).first();
      return row && toEvent(row);
    },
  };
}
export type EventsQueryRepository = ReturnType<typeof eventsQueryRepository>;
