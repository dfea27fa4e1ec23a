import type { Knex } from 'knex';
import { REMAINING_CAP, streamPage, type ExactRemaining, type StreamWindow } from '../paging.js';

/** A stored telemetry message as the telemetry service reads it (spec 2.5). */
export interface MessageRecord {
  id: string;
  deviceId: string;
  timestamp: Date;
  /** Catalog keys plus `location` (GeoJSON Point) and `accel`; only what that message carried. */
  data: Record<string, unknown>;
}

/** A message that has a location, with the parameters that were asked for (spec 4.4 locations). */
export interface LocationRecord extends MessageRecord { lon: number; lat: number }

/** `all` = every parameter of the message; a list = only those keys; [] = none. */
export type FieldSelection = 'all' | string[];

const toMessage = (r: Record<string, any>): MessageRecord =>
  ({ id: r.id, deviceId: r.device_id, timestamp: r.ts, data: r.data ?? {} });

/**
 * The message's data narrowed to `keys` in SQL, so unrequested parameters never leave the database.
 * `keys` is bound as one text[] parameter.
 */
function pickData(knex: Knex, keys: string[]): Knex.Raw {
  return knex.raw(
    `coalesce((select jsonb_object_agg(e.key, e.value) from jsonb_each(m.data) as e
      where e.key = any(?::text[])), '{}'::jsonb) as data`, [keys]);
}

/**
 * A device's messages up to `priorUntil`: its stored total (migration 013) less those newer, counted up to
 * REMAINING_CAP (the first pages: a handful of index entries). Null past the cap, or without a total. The ORDER BY
 * is messages_device_ts_id's: without it, when other devices' messages are newer than the page, the planner (which
 * cannot know a device's rows and timestamps go together) took `ts > ?` to match a third of the device's rows and
 * scanned the whole table: 22 ms at 120,000 messages.
 */
export const MESSAGES_UP_TO = `
  SELECT (SELECT n FROM device_message_counts WHERE device_id = ?) AS total,
    (SELECT count(*) FROM (SELECT 1 FROM messages WHERE device_id = ? AND ts > ? ORDER BY device_id, ts DESC, id DESC LIMIT ?) x) AS newer`;

function messagesUpTo(trx: Knex, deviceId: string): ExactRemaining {
  return async (priorUntil) => {
    const { rows: [r] } = await trx.raw(MESSAGES_UP_TO, [deviceId, deviceId, priorUntil, REMAINING_CAP]);
    const newer = Number(r.newer);
    return r.total === null || newer >= REMAINING_CAP ? null : Math.max(0, Number(r.total) - newer);
  };
}

/**
 * MESSAGES_UP_TO's two values taken with the page itself, for a window without `since`: the device's stored total and
 * its messages newer than `until` (capped). The messages newer than the prior link's `until` are then those plus the
 * page's own (a page holds every message from its oldest one's millisecond to `until`), so `remaining` needs no
 * second round trip (issue 13: under ingest each round trip waits on a busy core, and a read was two of them). One
 * statement, so one snapshot: the page and its count can no longer disagree.
 */
function withTotals(trx: Knex, deviceId: string, until: Date): Knex.Raw[] {
  return [
    trx.raw('(SELECT n FROM device_message_counts WHERE device_id = ?) AS dw_total', [deviceId]),
    trx.raw(`(SELECT count(*) FROM (SELECT 1 FROM messages WHERE device_id = ? AND ts > ? ORDER BY device_id, ts DESC, id DESC
      LIMIT ?) x) AS dw_newer`, [deviceId, until, REMAINING_CAP]),
  ];
}

/** The page's remaining from withTotals' columns; null when past the cap or without a total (then counted). */
const remainingFromTotals: ExactRemaining = (_priorUntil, rows) => {
  const { dw_total: total, dw_newer: newerThanUntil } = rows[0] as { dw_total: unknown; dw_newer: unknown };
  const newer = Number(newerThanUntil) + rows.length;
  return total === null || total === undefined || newer >= REMAINING_CAP ? null : Math.max(0, Number(total) - newer);
};

/** Reads only: the gateway's ingest pipeline writes `messages` (messages.repository.ts). */
export function telemetryRepository(knex: Knex) {
  const ofDevice = (trx: Knex, deviceId: string) => trx('messages as m').where('m.device_id', deviceId);

  return {
    /** Messages of a device, newest first (spec 4.4, stream pagination). */
    async listMessages(deviceId: string, w: StreamWindow, trx: Knex = knex) {
      // without `since`, remaining comes with the page (withTotals); its count is the fallback past the cap
      const totals = w.since ? [] : withTotals(trx, deviceId, w.until);
      const page = await streamPage<Record<string, any>>(
        () => ofDevice(trx, deviceId).select('m.id', 'm.device_id', 'm.ts', 'm.data', ...totals), 'm.ts', w, 'm.id',
        async (priorUntil, rows) => remainingFromTotals(priorUntil, rows) ?? messagesUpTo(trx, deviceId)(priorUntil, rows));
      return { remaining: page.remaining, messages: page.rows.map(toMessage) };
    },

    async getMessage(id: string, trx: Knex = knex): Promise<MessageRecord | undefined> {
      const row = await trx('messages as m').select('m.id', 'm.device_id', 'm.ts', 'm.data').where('m.id', id).first();
      return row && toMessage(row);
    },

    /**
     * Messages that have a location, newest first; `remaining` counts only those. With `all` the data
     * is every parameter except `location` itself (that is the feature's geometry).
     */
    async listLocations(deviceId: string, w: StreamWindow, fields: FieldSelection, trx: Knex = knex) {
      const data = fields === 'all' ? trx.raw(`m.data - 'location' as data`)
        : fields.length ? pickData(trx, fields) : trx.raw(`'{}'::jsonb as data`);
      const page = await streamPage<Record<string, any>>(() => ofDevice(trx, deviceId).whereNotNull('m.location')
        .select('m.id', 'm.device_id', 'm.ts', data, trx.raw('ST_X(m.location) as lon'), trx.raw('ST_Y(m.location) as lat')),
      'm.ts', w, 'm.id');
      const locations: LocationRecord[] = page.rows.map((r) => ({ ...toMessage(r), lon: Number(r.lon), lat: Number(r.lat) }));
      return { remaining: page.remaining, locations };
    },

    /**
     * Snapshots (spec 2.5, 4.4): messages holding at least one of `fields` (jsonb `?|`), each with
     * only those of `fields` it holds.
     */
    async listSnapshots(deviceId: string, w: StreamWindow, fields: string[], trx: Knex = knex) {
      const page = await streamPage<Record<string, any>>(() => ofDevice(trx, deviceId)
        .whereRaw('m.data \\?| ?::text[]', [fields])
        .select('m.id', 'm.device_id', 'm.ts', pickData(trx, fields)), 'm.ts', w, 'm.id');
      return { remaining: page.remaining, snapshots: page.rows.map(toMessage) };
    },
  };
}
export type TelemetryRepository = ReturnType<typeof telemetryRepository>;
