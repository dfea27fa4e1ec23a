import type { Knex } from 'knex';
import { uuid7 } from '../../lib/uuid7.js';
import type { CommandState } from '../../lib/commands.js';
import { streamPage, type StreamWindow } from '../paging.js';
import { readableDeviceIds, type Principal } from '../repositories/scope.js';
import type { NewEvent } from '../repositories/events.repository.js';
import { COMMANDS_CHANNEL, commandsDueHere } from './signal.js';

export interface Command {
  id: string; deviceId: string; applicationId: string; type: string; payload: Record<string, unknown> | null;
  state: CommandState; createdAt: Date; sentAt: Date | null; deliveredAt: Date | null; respondedAt: Date | null;
  endedAt: Date | null; expiresAt: Date; response: { ok: boolean; result?: unknown; error?: string } | null;
}

export interface CommandRow {
  id: string; device_id: string; application_id: string; type: string; payload: Record<string, unknown> | null;
  state: CommandState; created_at: Date; sent_at: Date | null; delivered_at: Date | null; responded_at: Date | null;
  ended_at: Date | null; expires_at: Date; response: Command['response'];
}

const COLUMNS = ['id', 'device_id', 'application_id', 'type', 'payload', 'state', 'created_at', 'sent_at', 'delivered_at',
  'responded_at', 'ended_at', 'expires_at', 'response'];
const C_COLUMNS = COLUMNS.map((c) => `c.${c}`);
const RETURNING = COLUMNS.map((c) => `c.${c}`).join(', ');

export const toCommand = (r: CommandRow): Command => ({
  id: r.id, deviceId: r.device_id, applicationId: r.application_id, type: r.type, payload: r.payload, state: r.state,
  createdAt: new Date(r.created_at), sentAt: r.sent_at && new Date(r.sent_at), deliveredAt: r.delivered_at && new Date(r.delivered_at),
  respondedAt: r.responded_at && new Date(r.responded_at), endedAt: r.ended_at && new Date(r.ended_at),
  expiresAt: new Date(r.expires_at), response: r.response,
});

/** The states a command is open in: it may still be sent, delivered or answered. */
const OPEN = `('queued', 'sent', 'delivered')`;

/**
 * The command's application can still read its device (db/repositories/scope.ts): one whose access ended (its owner
 * withdrew the authorization, or an Enterprise application deregistered the device) sends it nothing more; what it
 * queued waits until it expires.
 */
const STILL_READABLE = `
  SELECT 1 FROM authorizations au JOIN applications ap ON ap.id = au.application_id
  WHERE au.device_id = c.device_id AND au.application_id = c.application_id
    AND (ap.kind = 'consumer' OR EXISTS (SELECT 1 FROM registrations r WHERE r.device_id = c.device_id AND r.application_id = c.application_id))`;

/**
 * The commands that may go out now to the devices of the JSON array `?` (the devices connected to the calling gateway
 * and subscribed to their commands), marked `sent` in the same statement: of each device, its queued concurrent ones
 * (lib/commands.ts: `ping`), and its oldest queued other one when none other is in flight (sent or delivered, not yet
 * answered), so a device's commands go one at a time, in the order they were created. A command claimed by a
 * concurrent call is skipped (its row's state is no longer `queued` once the other commits). Only commands whose
 * application can still read the device go (STILL_READABLE).
 */
const CLAIM = `
  WITH open AS (
    SELECT c.id, c.device_id, c.seq, c.concurrent, c.state FROM commands c
    WHERE c.device_id IN (SELECT value::uuid FROM json_array_elements_text(?::json)) AND c.state IN ${OPEN} AND c.expires_at > now()
      AND (c.state <> 'queued' OR EXISTS (${STILL_READABLE}))
  ),
  next AS (
    SELECT id FROM open WHERE state = 'queued' AND concurrent
    UNION ALL
    (SELECT DISTINCT ON (o.device_id) o.id FROM open o
     WHERE o.state = 'queued' AND NOT o.concurrent
       AND NOT EXISTS (SELECT 1 FROM open f WHERE f.device_id = o.device_id AND NOT f.concurrent AND f.state <> 'queued')
     ORDER BY o.device_id, o.seq)
  )
  UPDATE commands c SET state = 'sent', sent_at = now() FROM next
  WHERE c.id = next.id AND c.state = 'queued'
  RETURNING ${RETURNING}, c.seq`;

/**
 * Replies (the JSON array `?` of {device_id, id, ok, response}) to commands waiting for one: each becomes
 * `succeeded` or `failed`, only when it is the device's own command and still open (sent or delivered: a reply may
 * overtake the PUBACK's handling; queued: never sent, a reply is not to it). Returns the commands answered.
 */
const REPLY = `
  UPDATE commands c SET state = CASE WHEN r.ok THEN 'succeeded' ELSE 'failed' END, response = r.response,
    responded_at = now(), ended_at = now(), delivered_at = coalesce(c.delivered_at, now())
  FROM json_to_recordset(?::json) AS r(device_id uuid, id uuid, ok boolean, response jsonb)
  WHERE c.id = r.id AND c.device_id = r.device_id AND c.state IN ('sent', 'delivered')
  RETURNING ${RETURNING}`;

/** A queued command, and its device's signal to the gateways (NOTIFY, delivered at the statement's commit). */
const CREATE = `
  WITH c AS (
    INSERT INTO commands (id, device_id, application_id, type, payload, concurrent, state, created_at, expires_at)
    VALUES (?, ?, ?, ?, ?::jsonb, ?, 'queued', now(), ?)
    RETURNING ${COLUMNS.join(', ')}
  )
  SELECT c.*, pg_notify(?, c.device_id::text) FROM c`;

/** Open commands whose time ran out become `expired` (ended at their expiry time). */
const EXPIRE = `
  UPDATE commands c SET state = 'expired', ended_at = c.expires_at
  WHERE c.id IN (SELECT id FROM commands WHERE state IN ${OPEN} AND expires_at <= now() ORDER BY expires_at LIMIT ?)
    AND c.state IN ${OPEN}
  RETURNING ${RETURNING}`;

/** Commands expired in one pass at most (the next pass, a second later, takes the rest). */
const EXPIRE_BATCH = 1000;

/** The event a command's end makes: `command-<state>`, the application's own (no other application sees it). */
export function commandEvent(c: Command): NewEvent {
  return {
    deviceId: c.deviceId, vehicleId: null, applicationId: c.applicationId, timestamp: c.endedAt ?? new Date(),
    eventType: `command-${c.state}`, objectType: 'command', objectId: c.id,
    meta: { type: c.type, ...(c.response && { response: c.response }) },
  };
}

/**
 * Commands to devices (docs/concepts/commands-and-presence.md). An application reads only the commands it created,
 * to devices it can still read.
 */
export function commandsRepository(knex: Knex) {
  const visible = (trx: Knex, app: Principal) => trx('commands as c').select(C_COLUMNS)
    .where('c.application_id', app.id).whereIn('c.device_id', readableDeviceIds(trx, app));

  return {
    /** Stores a queued command and signals the gateways, in one statement (one round trip for a POST). */
    async create(app: Principal, c: { deviceId: string; type: string; payload: Record<string, unknown> | null; concurrent: boolean; expiresAt: Date }): Promise<Command> {
      const { rows: [row] } = await knex.raw(CREATE, [uuid7(), c.deviceId, app.id, c.type, c.payload === null ? null : JSON.stringify(c.payload),
        c.concurrent, c.expiresAt, COMMANDS_CHANNEL]) as { rows: CommandRow[] };
      commandsDueHere([c.deviceId]);
      return toCommand(row);
    },

    /** A device's commands by this application, newest first (stream pagination on createdAt), optionally of one state. */
    async listForDevice(app: Principal, deviceId: string, state: string | undefined, w: StreamWindow, trx: Knex = knex) {
      const p = await streamPage<CommandRow>(() => {
        const q = visible(trx, app).where('c.device_id', deviceId);
        return state ? q.where('c.state', state) : q;
      }, 'c.created_at', w, 'c.id');
      return { remaining: p.remaining, prior: p.prior, newest: p.newest, commands: p.rows.map(toCommand) };
    },

    async get(app: Principal, id: string, trx: Knex = knex): Promise<Command | undefined> {
      const row = await visible(trx, app).where('c.id', id).first() as CommandRow | undefined;
      return row && toCommand(row);
    },

    /**
     * Cancels a queued command of this application: the cancelled command, or the command as it is when it was no
     * longer queued (the caller refuses), or undefined when the application has no such command.
     */
    async cancel(app: Principal, id: string): Promise<{ cancelled: boolean; command: Command } | undefined> {
      return knex.transaction(async (trx) => {
        const row = await visible(trx, app).where('c.id', id).forUpdate().first() as CommandRow | undefined;
        if (!row) return undefined;
        if (row.state !== 'queued') return { cancelled: false, command: toCommand(row) };
        const [done] = await trx('commands').where({ id }).update({ state: 'cancelled', ended_at: trx.fn.now() }).returning(COLUMNS) as CommandRow[];
        return { cancelled: true, command: toCommand(done) };
      });
    },

    /** CLAIM: the commands to publish now to these devices, already marked sent, in each device's order. */
    async claim(deviceIds: string[], trx: Knex = knex): Promise<Command[]> {
      if (!deviceIds.length) return [];
      const { rows } = await trx.raw(CLAIM, [JSON.stringify(deviceIds)]);
      return (rows as (CommandRow & { seq: string })[]).sort((a, b) => Number(a.seq) - Number(b.seq)).map(toCommand);
    },

    /**
     * The commands sent to these devices and not acknowledged, to publish again: their connection closed before the
     * PUBACK and a clean session does not keep them (a persistent one does, and the broker sends it again itself).
     */
    async unacknowledged(deviceIds: string[], trx: Knex = knex): Promise<Command[]> {
      if (!deviceIds.length) return [];
      const rows = await trx('commands as c').select(C_COLUMNS).whereIn('c.device_id', deviceIds)
        .where('c.state', 'sent').where('c.expires_at', '>', trx.fn.now()).orderBy('c.seq') as CommandRow[];
      return rows.map(toCommand);
    },

    /** The device's PUBACKs: these sent commands are delivered. */
    async delivered(ids: string[], trx: Knex = knex): Promise<void> {
      if (!ids.length) return;
      await trx('commands').whereIn('id', ids).where('state', 'sent').update({ delivered_at: trx.fn.now(), state: 'delivered' });
    },

    /** REPLY, in `trx`: the commands answered (each device's own, still open). */
    async reply(replies: { deviceId: string; commandId: string; ok: boolean; response: Record<string, unknown> }[], trx: Knex): Promise<Command[]> {
      if (!replies.length) return [];
      const { rows } = await trx.raw(REPLY, [JSON.stringify(replies.map((r) => ({ device_id: r.deviceId, id: r.commandId, ok: r.ok, response: r.response })))]);
      return (rows as CommandRow[]).map(toCommand);
    },

    /** EXPIRE, in `trx`: up to EXPIRE_BATCH open commands whose time ran out, now expired. */
    async expire(trx: Knex): Promise<Command[]> {
      const { rows } = await trx.raw(EXPIRE, [EXPIRE_BATCH]);
      return (rows as CommandRow[]).map(toCommand);
    },
  };
}
export type CommandsRepository = ReturnType<typeof commandsRepository>;
