import type { Knex } from 'knex';
import type { NewEvent } from '../repositories/events.repository.js';

/** A device's presence as the API shows it (`status` on a device). */
export interface Presence { online: boolean; lastSeenAt: Date | null; lastConnectedAt: Date | null }

/** A connection a gateway holds: its device, its own id (a device's newer connection replaces it) and when. */
export interface Connection { deviceId: string; connectionId: string; at: Date }

const json = (v: unknown) => JSON.stringify(v);

/** The connections given (JSON `?`), one per device (its newest), of devices that exist. */
const OPENED = `
  SELECT DISTINCT ON (device_id) device_id, connection_id, at
  FROM json_to_recordset(?::json) AS r(device_id uuid, connection_id uuid, at timestamptz)
  WHERE EXISTS (SELECT 1 FROM devices d WHERE d.id = r.device_id)
  ORDER BY device_id, at DESC`;

/**
 * Which of the devices opening connections were online: their rows, locked in device order (two gateways taking the
 * same device wait for each other rather than deadlock). A statement of its own: a row locked in a CTE of the
 * statement that also updates it is skipped once the update came first.
 */
const ONLINE_BEFORE = `
  SELECT p.device_id, p.online FROM device_presence p
  WHERE p.device_id IN (SELECT value::uuid FROM json_array_elements_text(?::json))
  ORDER BY p.device_id FOR UPDATE`;

/** Connections opened on gateway `?`: each device's row says this gateway and connection hold it now. */
const CONNECTED = `
  INSERT INTO device_presence AS p (device_id, online, gateway_id, connection_id, last_seen_at, last_connected_at, disconnected_at)
  SELECT c.device_id, true, ?::uuid, c.connection_id, c.at, c.at, NULL FROM (${OPENED}) c
  ON CONFLICT (device_id) DO UPDATE SET online = true, gateway_id = excluded.gateway_id, connection_id = excluded.connection_id,
    last_seen_at = greatest(p.last_seen_at, excluded.last_seen_at), last_connected_at = excluded.last_connected_at, disconnected_at = NULL
  RETURNING p.device_id, p.last_connected_at`;

/** Connections closed: a device's row lets go of the gateway only when it is still this connection's. */
const DISCONNECTED = `
  UPDATE device_presence p SET gateway_id = NULL, connection_id = NULL, disconnected_at = r.at
  FROM json_to_recordset(?::json) AS r(device_id uuid, connection_id uuid, at timestamptz)
  WHERE p.device_id = r.device_id AND p.connection_id = r.connection_id`;

/** Frames and keep-alives seen: `last_seen_at` moves forward only. */
const SEEN = `
  UPDATE device_presence p SET last_seen_at = r.at
  FROM json_to_recordset(?::json) AS r(device_id uuid, at timestamptz)
  WHERE p.device_id = r.device_id AND (p.last_seen_at IS NULL OR p.last_seen_at < r.at)`;

/**
 * Gateways whose heartbeat is older than `?` ms have stopped without closing their connections (killed): their devices'
 * rows let go of them, disconnected as of the gateway's last heartbeat; the gateways' rows go. A row held by a gateway
 * that has no row at all (it stopped, and could not write its last disconnections) is let go of as of now.
 */
const RELEASE_LOST = `
  WITH lost AS (
    DELETE FROM gateways g WHERE g.heartbeat_at < now() - ?::bigint * interval '1 millisecond' RETURNING g.id, g.heartbeat_at
  )
  UPDATE device_presence p SET gateway_id = NULL, connection_id = NULL,
    disconnected_at = coalesce((SELECT lost.heartbeat_at FROM lost WHERE lost.id = p.gateway_id), now())
  WHERE p.gateway_id IN (SELECT id FROM lost)
     OR (p.gateway_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM gateways g WHERE g.id = p.gateway_id))`;

/**
 * Devices disconnected for longer than the grace period (`?` ms) and not connected again: offline. Returns them with
 * the time their connection closed, for `device-offline`.
 */
const GONE_OFFLINE = `
  UPDATE device_presence p SET online = false
  WHERE p.online AND p.gateway_id IS NULL AND p.disconnected_at <= now() - ?::bigint * interval '1 millisecond'
  RETURNING p.device_id, p.disconnected_at, p.last_seen_at`;

/** A presence event: every reader of the device sees it (no application of its own). */
const presenceEvent = (deviceId: string, eventType: 'device-online' | 'device-offline', at: Date, meta: Record<string, unknown>): NewEvent => ({
  deviceId, vehicleId: null, applicationId: null, timestamp: at, eventType, objectType: 'device', objectId: deviceId, meta,
});

/** Device presence (docs/concepts/commands-and-presence.md): what the gateways record, read by the API. */
export function presenceRepository(knex: Knex) {
  return {
    /** This gateway runs: its heartbeat now. */
    async heartbeat(gatewayId: string, startedAt: Date, trx: Knex = knex): Promise<void> {
      await trx.raw(`INSERT INTO gateways (id, started_at, heartbeat_at) VALUES (?, ?, now())
        ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`, [gatewayId, startedAt]);
    },

    /** This gateway stops: its row goes (its connections were closed before, each disconnected). */
    async stopped(gatewayId: string, trx: Knex = knex): Promise<void> {
      await trx('gateways').where({ id: gatewayId }).delete();
    },

    /**
     * ONLINE_BEFORE then CONNECTED, in `trx`: the `device-online` events of the devices that were offline (no row, or
     * `online` false).
     */
    async connected(gatewayId: string, connections: Connection[], trx: Knex): Promise<NewEvent[]> {
      if (!connections.length) return [];
      const { rows: before } = await trx.raw(ONLINE_BEFORE, [json([...new Set(connections.map((c) => c.deviceId))])]);
      const online = new Set((before as { device_id: string; online: boolean }[]).filter((r) => r.online).map((r) => r.device_id));
      const { rows } = await trx.raw(CONNECTED, [gatewayId,
        json(connections.map((c) => ({ device_id: c.deviceId, connection_id: c.connectionId, at: c.at })))]);
      return (rows as { device_id: string; last_connected_at: Date }[]).filter((r) => !online.has(r.device_id))
        .map((r) => presenceEvent(r.device_id, 'device-online', new Date(r.last_connected_at), { gatewayId }));
    },

    async disconnected(connections: Connection[], trx: Knex = knex): Promise<void> {
      if (!connections.length) return;
      await trx.raw(DISCONNECTED, [json(connections.map((c) => ({ device_id: c.deviceId, connection_id: c.connectionId, at: c.at })))]);
    },

    async seen(seen: { deviceId: string; at: Date }[], trx: Knex = knex): Promise<void> {
      if (!seen.length) return;
      await trx.raw(SEEN, [json(seen.map((s) => ({ device_id: s.deviceId, at: s.at })))]);
    },

    /**
     * RELEASE_LOST then GONE_OFFLINE, in `trx`: the `device-offline` events of devices disconnected longer than
     * `graceMs`, counting a lost gateway's (no heartbeat for `lostAfterMs`) as disconnected at its last heartbeat.
     */
    async sweep(graceMs: number, lostAfterMs: number, trx: Knex): Promise<NewEvent[]> {
      await trx.raw(RELEASE_LOST, [lostAfterMs]);
      const { rows } = await trx.raw(GONE_OFFLINE, [graceMs]);
      return (rows as { device_id: string; disconnected_at: Date; last_seen_at: Date | null }[]).map((r) => presenceEvent(
        r.device_id, 'device-offline', new Date(r.disconnected_at), { lastSeenAt: r.last_seen_at && new Date(r.last_seen_at).toISOString() }));
    },

    /** The devices' presence; a device that never connected is offline, never seen. */
    async of(deviceIds: string[], trx: Knex = knex): Promise<Map<string, Presence>> {
      const out = new Map<string, Presence>();
      if (!deviceIds.length) return out;
      const rows = await trx('device_presence').whereIn('device_id', deviceIds)
        .select('device_id', 'online', 'last_seen_at', 'last_connected_at') as { device_id: string; online: boolean; last_seen_at: Date | null; last_connected_at: Date | null }[];
      for (const r of rows) out.set(r.device_id, { online: r.online, lastSeenAt: r.last_seen_at && new Date(r.last_seen_at), lastConnectedAt: r.last_connected_at && new Date(r.last_connected_at) });
      return out;
    },
  };
}
export type PresenceRepository = ReturnType<typeof presenceRepository>;
