import type { Knex } from 'knex';
import { runStatements } from '../sql.js';

/**
 * Commands to devices and device presence (docs/concepts/commands-and-presence.md).
 * - `commands`: one row a command, from `queued` to a final state. `seq` keeps a device's commands in the order they
 *   were created (ids are UUIDv7, not monotonic within a millisecond). Indexes: (device_id, created_at, id) for a
 *   device's list, newest first (stream pagination); the open ones (not yet final) by device and `seq`, read by every
 *   dispatch, and by expiry time, read by the expiry pass each second.
 * - `device_presence`: a row a device that ever connected: whether it is online (what its last presence event said),
 *   the gateway and connection holding it now (null when none: `disconnected_at` says since when), and when it was
 *   last seen (a frame or a keep-alive) and last connected.
 * - `gateways`: each running gateway's heartbeat; a gateway whose heartbeat stops (a SIGKILL) leaves its devices to
 *   the other processes' presence pass.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(knex, `
    CREATE TABLE commands (
      id uuid PRIMARY KEY,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      device_id uuid NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
      application_id uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
      type text NOT NULL,
      payload jsonb,
      concurrent boolean NOT NULL DEFAULT false,
      state text NOT NULL CHECK (state IN ('queued', 'sent', 'delivered', 'succeeded', 'failed', 'expired', 'cancelled')),
      created_at timestamptz NOT NULL,
      sent_at timestamptz,
      delivered_at timestamptz,
      responded_at timestamptz,
      ended_at timestamptz,
      expires_at timestamptz NOT NULL,
      response jsonb
    );
    CREATE INDEX commands_device ON commands (device_id, created_at, id);
    CREATE INDEX commands_open ON commands (device_id, seq) WHERE state IN ('queued', 'sent', 'delivered');
    CREATE INDEX commands_expiry ON commands (expires_at) WHERE state IN ('queued', 'sent', 'delivered');
    CREATE INDEX commands_application ON commands (application_id);
    CREATE TABLE device_presence (
      device_id uuid PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
      online boolean NOT NULL DEFAULT false,
      gateway_id uuid,
      connection_id uuid,
      last_seen_at timestamptz,
      last_connected_at timestamptz,
      disconnected_at timestamptz
    );
    CREATE INDEX device_presence_gateway ON device_presence (gateway_id) WHERE gateway_id IS NOT NULL;
    CREATE INDEX device_presence_leaving ON device_presence (disconnected_at) WHERE online AND gateway_id IS NULL;
    CREATE TABLE gateways (
      id uuid PRIMARY KEY,
      started_at timestamptz NOT NULL,
      heartbeat_at timestamptz NOT NULL
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, `
    DROP TABLE IF EXISTS gateways;
    DROP TABLE IF EXISTS device_presence;
    DROP TABLE IF EXISTS commands;
  `);
}
