import type { Knex } from 'knex';
import { runStatements } from '../sql.js';
import { MESSAGE_SLOTS, messageDataFunctions, numAt } from '../message-data.sql.js';

/**
 * Messages in half the bytes (docs/operations/postgresql.md, "What a message costs"), every row kept:
 * - **data as slots**: the numbers of `data` (and the GPS fix's extras, from `extra.gps`) in one float8[] at fixed
 *   slots, `num`; its strings and lists in `txt` (null without any); `location` only in the point column, no longer
 *   also in `data` as GeoJSON (db/message-data.sql.ts; message_data() reads `data` back as the API shows it).
 *   `vehicle_speed` (migration 028) is the vehicleSpeed slot now, read as cheaply.
 * - **one index**, unique (device_id, ts, id): every per-device read walks it, and it is the idempotency key. A
 *   message's id carries its timestamp and a re-sent frame gets its first copy's id (lib/uuid7.ts frameUuid), so
 *   `messages_pkey` (lookups by id: the id gives the timestamp) and the (device_id, frame_id) index (duplicates: the
 *   id gives them away) are gone, and `frame_id` with them. Messages stored before keep their ids, whose time is when
 *   they were received: message_legacy_ids finds those by id.
 * - `kind` null for telemetry, the kind of nearly every frame.
 * - rule boundaries get their parameter's slot as a generated column, read by the rules statement.
 * The rows are copied into the new table in one statement and the old one dropped (no space left behind). The feed's
 * batches name messages by id and go (db/message-feed.ts: processes resume from the newest batch).
 */
export const COMPACT_COLUMNS = `
  id uuid NOT NULL,
  device_id uuid NOT NULL,
  ts timestamptz NOT NULL,
  received_at timestamptz NOT NULL,
  step_m double precision,
  kind text,
  num double precision[],
  txt jsonb,
  location geometry(Point, 4326),
  extra jsonb,
  step_source text,
  step_vehicle_id uuid`;

/** Planner statistics as migrations 012 and 022 set them: none for the payload, a small sample for the keys. */
export const COMPACT_STATISTICS = `ALTER TABLE messages
  ALTER COLUMN id SET STATISTICS 10, ALTER COLUMN device_id SET STATISTICS 10, ALTER COLUMN ts SET STATISTICS 10,
  ALTER COLUMN kind SET STATISTICS 10, ALTER COLUMN received_at SET STATISTICS 0, ALTER COLUMN step_m SET STATISTICS 0,
  ALTER COLUMN num SET STATISTICS 0, ALTER COLUMN txt SET STATISTICS 0, ALTER COLUMN location SET STATISTICS 0,
  ALTER COLUMN extra SET STATISTICS 0, ALTER COLUMN step_source SET STATISTICS 0, ALTER COLUMN step_vehicle_id SET STATISTICS 0`;

/** The message-count triggers of migration 013 (their functions stay). */
export const COUNT_TRIGGERS = `
  CREATE TRIGGER messages_count_inserted AFTER INSERT ON messages REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION messages_count_inserted();
  CREATE TRIGGER messages_count_deleted AFTER DELETE ON messages REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION messages_count_deleted();`;

const slotColumn = `ALTER TABLE rule_boundaries ADD COLUMN slot integer GENERATED ALWAYS AS
  (array_position(ARRAY[${MESSAGE_SLOTS.map((k) => `'${k}'`).join(', ')}]::text[], parameter)) STORED`;

export async function up(knex: Knex): Promise<void> {
  for (const f of messageDataFunctions()) await knex.raw(f);
  await runStatements(knex, `
    CREATE TABLE message_legacy_ids (id uuid PRIMARY KEY, device_id uuid NOT NULL, ts timestamptz NOT NULL);
    INSERT INTO message_legacy_ids (id, device_id, ts) SELECT id, device_id, ts FROM messages WHERE message_id_ts(id) <> ts;
    CREATE TABLE messages_compact (${COMPACT_COLUMNS});
    INSERT INTO messages_compact (id, device_id, ts, received_at, step_m, kind, num, txt, location, extra, step_source, step_vehicle_id)
      SELECT id, device_id, ts, received_at, step_m, nullif(kind, 'telemetry'), message_num(data, extra -> 'gps'), message_txt(data),
        location, nullif(extra - 'gps', '{}'::jsonb), step_source, step_vehicle_id
      FROM messages;
    DROP TABLE messages;
    ALTER TABLE messages_compact RENAME TO messages;
    CREATE UNIQUE INDEX messages_device_ts_id ON messages (device_id, ts DESC, id DESC);
    ${COUNT_TRIGGERS}
    ${COMPACT_STATISTICS};
    DELETE FROM message_feed;
    ${slotColumn};
  `);
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, `
    ALTER TABLE rule_boundaries DROP COLUMN slot;
    CREATE TABLE messages_wide (
      id uuid PRIMARY KEY, device_id uuid NOT NULL, ts timestamptz NOT NULL, frame_id text,
      kind text NOT NULL DEFAULT 'telemetry', data jsonb NOT NULL, location geometry(Point, 4326), extra jsonb,
      received_at timestamptz NOT NULL, step_m double precision, step_source text, step_vehicle_id uuid,
      vehicle_speed double precision);
    INSERT INTO messages_wide (id, device_id, ts, kind, data, location, extra, received_at, step_m, step_source, step_vehicle_id, vehicle_speed)
      SELECT m.id, m.device_id, m.ts, coalesce(m.kind, 'telemetry'), message_data(m.num, m.txt, m.location), m.location,
        nullif(coalesce(m.extra, '{}'::jsonb) || coalesce((SELECT jsonb_build_object('gps', jsonb_object_agg(g.k, g.v))
          FROM (VALUES ('alt', ${numAt('m', 'gps.alt')}), ('speed', ${numAt('m', 'gps.speed')}), ('heading', ${numAt('m', 'gps.heading')}),
            ('hdop', ${numAt('m', 'gps.hdop')}), ('satellites', ${numAt('m', 'gps.satellites')})) g(k, v) WHERE g.v IS NOT NULL
            HAVING count(*) > 0), '{}'::jsonb),
          '{}'::jsonb),
        m.received_at, m.step_m, m.step_source, m.step_vehicle_id, ${numAt('m', 'vehicleSpeed')}
      FROM messages m;
    DROP TABLE messages;
    ALTER TABLE messages_wide RENAME TO messages;
    CREATE INDEX messages_device_ts_id ON messages (device_id, ts DESC, id DESC);
    CREATE UNIQUE INDEX messages_device_frame ON messages (device_id, frame_id) WHERE frame_id IS NOT NULL;
    ${COUNT_TRIGGERS}
    DROP TABLE message_legacy_ids;
    DROP FUNCTION IF EXISTS message_data(float8[], jsonb, geometry), message_accel(float8[]), message_id_ts(uuid),
      message_num(jsonb, jsonb), message_txt(jsonb);
  `);
}
