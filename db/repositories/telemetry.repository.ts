import type { Knex } from 'knex';
import { REMAINING_CAP, streamPage, type StreamWindow } from '../paging.js';
import { carriesAny, carriesData, messageData } from '../message-data.sql.js';
import { uuid7Ms } from '../../lib/uuid7.js';
import { readableDeviceIds, type Principal } from './scope.js';

/** A stored telemetry message as the telemetry service reads it. */
export interface MessageRecord {
  id: string;
  deviceId: string;
  timestamp: Date;
  /** Catalog keys plus `location` (GeoJSON Point) and `accel`; only what that message carried. */
  data: Record<string, unknown>;
}

/** A message that has a location, with the parameters that were asked for (the locations endpoint). */
export interface LocationRecord extends MessageRecord { lon: number; lat: number }

/** `all` = every parameter of the message; a list = only those keys; [] = none. */
export type FieldSelection = 'all' | string[];

interface MessageRow { id: string; device_id: string; ts: Date; data: Record<string, unknown> | null }
const toMessage = (r: MessageRow): MessageRecord =>
  ({ id: r.id, deviceId: r.device_id, timestamp: r.ts, data: r.data ?? {} });

/**
 * The message's data narrowed to `keys` in SQL, so unrequested parameters never leave the database.
 * `keys` is bound as one text[] parameter.
 */
function pickData(knex: Knex, keys: string[]): Knex.Raw {
  return knex.raw(
    `coalesce((select jsonb_object_agg(e.key, e.value) from jsonb_each(${messageData('m')}) as e
      where e.key = any(?::text[])), '{}'::jsonb) as data`, [keys]);
}

/**
 * What a page of a device's messages without `since` selects besides the messages, for its `remaining` (as a second
 * statement it would be a second round trip, and under ingest each round trip waits on a busy core): the device's
 * stored total (migration 013) and its messages above the window, each part counted up to REMAINING_CAP: those newer
 * than `until`, and those dated `until` with an id at or after the window's `before` cursor (none without a cursor:
 * `id >= NULL` is never true). The messages the prior link does not reach are those plus the page's own; one
 * statement, so the page and its count share a snapshot. Two counts, each an index range of messages_device_ts_id
 * (one `ts > ?` or'ed with the cursor's test made the planner scan and sort). The first one's ORDER BY is that
 * index's: without it, when other devices' messages are newer, the planner (which cannot know a device's rows and
 * timestamps go together) took `ts > ?` to match a third of the device's rows and scanned the whole table.
 * Bindings: messageTotalsBindings.
 */
export const MESSAGE_TOTALS = `(SELECT sum(n) FROM device_message_counts WHERE device_id = ?) AS dw_total,
  (SELECT count(*) FROM (SELECT 1 FROM messages WHERE device_id = ? AND ts > ? ORDER BY device_id, ts DESC, id DESC LIMIT ?) x)
  + (SELECT count(*) FROM (SELECT 1 FROM messages WHERE device_id = ? AND ts = ? AND id >= ?::uuid LIMIT ?) y) AS dw_newer`;

export const messageTotalsBindings = (deviceId: string, until: Date, before?: string) =>
  [deviceId, deviceId, until, REMAINING_CAP, deviceId, until, before ?? null, REMAINING_CAP];

/**
 * `remaining` from MESSAGE_TOTALS' columns (those of the page's first row) and the page's length; null without a
 * total or past the cap, where streamPage counts (capped).
 */
export function remainingFromTotals(first: Record<string, unknown>, pageLength: number): number | null {
  const newer = Number(first.dw_newer) + pageLength;
  return first.dw_total === null || newer >= REMAINING_CAP ? null : Math.max(0, Number(first.dw_total) - newer);
}

/** Reads only: the gateway's ingest pipeline writes `messages` (messages.repository.ts). */
export function telemetryRepository(knex: Knex) {
  const ofDevice = (trx: Knex, deviceId: string) => trx('messages as m').where('m.device_id', deviceId);
  const data = (trx: Knex) => trx.raw(`${messageData('m')} as data`);

  return {
    /** Messages of a device, newest first (stream pagination). */
    async listMessages(deviceId: string, w: StreamWindow, trx: Knex = knex) {
      // without `since`, remaining comes with the page (MESSAGE_TOTALS)
      const totals = w.since ? [] : [trx.raw(MESSAGE_TOTALS, messageTotalsBindings(deviceId, w.until, w.before))];
      const page = await streamPage<MessageRow>(
        () => ofDevice(trx, deviceId).select('m.id', 'm.device_id', 'm.ts', data(trx), ...totals), 'm.ts', w, 'm.id',
        (rows) => remainingFromTotals(rows[0], rows.length));
      return { remaining: page.remaining, prior: page.prior, newest: page.newest, messages: page.rows.map(toMessage) };
    },

    /**
     * One message by id, of `deviceId` or of any device `readableBy` may read. The id carries the message's timestamp
     * (lib/uuid7.ts), so the lookup is one (device_id, ts, id) index probe per device, in the day's partition of
     * that timestamp (migration 036); a message stored before ids carried it is found through message_legacy_ids
     * (migration 035).
     */
    async getMessage(id: string, of: { deviceId: string } | { readableBy: Principal }, trx: Knex = knex): Promise<MessageRecord | undefined> {
      const devices = (q: Knex.QueryBuilder) => ('deviceId' in of ? q.where('m.device_id', of.deviceId)
        : q.whereIn('m.device_id', readableDeviceIds(trx, of.readableBy)));
      const find = (ts: Date) => devices(trx('messages as m').select('m.id', 'm.device_id', 'm.ts', data(trx))
        .where('m.ts', ts).where('m.id', id)).first();
      const ms = uuid7Ms(id);
      let row = ms === null ? undefined : await find(new Date(ms));
      if (!row) {
        const legacy = await trx('message_legacy_ids').select('ts').where('id', id).first();
        if (legacy) row = await find(legacy.ts);
      }
      return row && toMessage(row);
    },

    /**
     * Messages that have a location, newest first; `remaining` counts only those. With `all` the data
     * is every parameter except `location` itself (that is the feature's geometry).
     */
    async listLocations(deviceId: string, w: StreamWindow, fields: FieldSelection, trx: Knex = knex) {
      const data = fields === 'all' ? trx.raw('message_data(m.num, m.txt, NULL) as data')
        : fields.length ? pickData(trx, fields) : trx.raw(`'{}'::jsonb as data`);
      const page = await streamPage<MessageRow & { lon: number | string; lat: number | string }>(() => ofDevice(trx, deviceId).whereNotNull('m.location')
        .select('m.id', 'm.device_id', 'm.ts', data, trx.raw('ST_X(m.location) as lon'), trx.raw('ST_Y(m.location) as lat')),
      'm.ts', w, 'm.id');
      const locations: LocationRecord[] = page.rows.map((r) => ({ ...toMessage(r), lon: Number(r.lon), lat: Number(r.lat) }));
      return { remaining: page.remaining, prior: page.prior, newest: page.newest, locations };
    },

    /**
     * Snapshots: messages holding at least one of `fields` (db/message-data.sql.ts carriesAny), each with
     * only those of `fields` it holds.
     */
    async listSnapshots(deviceId: string, w: StreamWindow, fields: FieldSelection, trx: Knex = knex) {
      const page = await streamPage<MessageRow>(() => {
        if (fields === 'all') return ofDevice(trx, deviceId).whereRaw(carriesData('m')).select('m.id', 'm.device_id', 'm.ts', data(trx));
        const carries = carriesAny('m', fields);
        return ofDevice(trx, deviceId).whereRaw(carries.sql, carries.bindings as Knex.RawBinding[])
          .select('m.id', 'm.device_id', 'm.ts', pickData(trx, fields));
      }, 'm.ts', w, 'm.id');
      return { remaining: page.remaining, prior: page.prior, newest: page.newest, snapshots: page.rows.map(toMessage) };
    },
  };
}
export type TelemetryRepository = ReturnType<typeof telemetryRepository>;
