// Commands to devices (docs/concepts/commands-and-presence.md): the catalog of types, shared by the API (which
// validates payloads), the gateway (which publishes them) and the simulator (whose devices answer them), and the two
// messages on the wire: a command on devices/<id>/commands, a reply on devices/<id>/responses.
import { ValidationError } from './errors.js';
import { holdsNul, nestsDeeperThan, MAX_JSON_DEPTH } from './json-bounds.js';

export interface CommandType {
  /** What the device does, and what its reply's `result` carries (docs). */
  description: string;
  /**
   * Checks a payload (undefined when the request had none) and returns the one stored; throws a ValidationError
   * naming the field.
   */
  payload(p: unknown): Record<string, unknown> | null;
  /**
   * May go out while another command of the device waits for its reply (still in order with its own type).
   * Only `ping`: a liveness check should not wait behind a slow command.
   */
  concurrent?: boolean;
}

/** Bytes a `custom` payload may take as JSON (the whole command message stays far below the MQTT packet limit). */
export const MAX_CUSTOM_PAYLOAD_BYTES = 16_384;
/** Seconds `set-interval` accepts. */
export const INTERVAL_SECONDS = { min: 1, max: 3600 } as const;

const none = (type: string) => (p: unknown) => {
  if (p === undefined || p === null || (isObject(p) && Object.keys(p).length === 0)) return null;
  throw new ValidationError(`command.payload: ${type} takes no payload`);
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const COMMAND_TYPES: Readonly<Record<string, CommandType>> = {
  ping: { description: 'Answers at once; `result` is empty. A liveness check.', payload: none('ping'), concurrent: true },
  'set-interval': {
    description: 'Sets the seconds between telemetry frames from now on; `result.seconds` is the interval it applied.',
    payload(p) {
      if (!isObject(p)) throw new ValidationError('command.payload: set-interval needs {"seconds": N}');
      const extra = Object.keys(p).filter((k) => k !== 'seconds');
      if (extra.length) throw new ValidationError(`command.payload.${extra[0]}: set-interval takes only seconds`);
      const s = p.seconds;
      if (typeof s !== 'number' || !Number.isInteger(s) || s < INTERVAL_SECONDS.min || s > INTERVAL_SECONDS.max) {
        throw new ValidationError(`command.payload.seconds must be an integer from ${INTERVAL_SECONDS.min} to ${INTERVAL_SECONDS.max}`);
      }
      return { seconds: s };
    },
  },
  'request-vin': { description: "Replies with the vehicle's VIN: `result.vin`.", payload: none('request-vin') },
  'request-dtcs': { description: 'Replies with the trouble codes stored now: `result.codes` (an array, empty when none).', payload: none('request-dtcs') },
  'clear-dtcs': {
    description: 'Clears the stored trouble codes (OBD-II mode 04); `result.cleared` lists the codes it cleared. The next frame reports none.',
    payload: none('clear-dtcs'),
  },
  reboot: { description: 'Replies, then disconnects and connects again.', payload: none('reboot') },
  custom: {
    description: 'An opaque JSON object for the device; the platform neither reads it nor the reply\'s `result`.',
    payload(p) {
      if (p === undefined || p === null) return null;
      if (!isObject(p)) throw new ValidationError('command.payload: a custom payload must be a JSON object');
      if (nestsDeeperThan(p)) throw new ValidationError(`command.payload nests more than ${MAX_JSON_DEPTH} levels deep`);
      if (holdsNul(p)) throw new ValidationError('command.payload holds a U+0000 character, which cannot be stored');
      const bytes = Buffer.byteLength(JSON.stringify(p));
      if (bytes > MAX_CUSTOM_PAYLOAD_BYTES) {
        throw new ValidationError(`command.payload is ${bytes} bytes as JSON; at most ${MAX_CUSTOM_PAYLOAD_BYTES}`);
      }
      return p;
    },
  },
};
export const COMMAND_TYPE_NAMES = Object.keys(COMMAND_TYPES);

export const COMMAND_STATES = ['queued', 'sent', 'delivered', 'succeeded', 'failed', 'expired', 'cancelled'] as const;
export type CommandState = (typeof COMMAND_STATES)[number];
/** States a command leaves no more. */
export const FINAL_STATES: readonly CommandState[] = ['succeeded', 'failed', 'expired', 'cancelled'];

/** Seconds a command waits for its reply when `expiresIn` is not given, and the most it may ask for (7 days). */
export const DEFAULT_EXPIRES_IN = 300;
export const MAX_EXPIRES_IN = 7 * 86_400;

/** What goes out on devices/<id>/commands (QoS 1): the device replies quoting `commandId`. */
export interface CommandMessage {
  commandId: string;
  type: string;
  payload: Record<string, unknown> | null;
  /** ISO time after which the platform no longer waits for the reply. */
  expiresAt: string;
}

/** What a device publishes on devices/<id>/responses. */
export interface CommandReply {
  commandId: string;
  ok: boolean;
  result?: unknown;
  error?: string;
}

export const commandMessage = (c: { id: string; type: string; payload: Record<string, unknown> | null; expiresAt: Date }): CommandMessage => ({
  commandId: c.id, type: c.type, payload: c.payload, expiresAt: c.expiresAt.toISOString(),
});

/** Characters of a reply's `error` kept. */
export const MAX_REPLY_ERROR_CHARS = 1000;

/**
 * A reply payload as JSON, checked: returns the reply, or a reason it is refused. The payload's size is bounded by the
 * gateway before (--max-payload-bytes).
 */
export function parseReply(text: string): CommandReply | string {
  let v: unknown;
  try { v = JSON.parse(text); } catch { return 'a reply must be JSON: {"commandId", "ok", "result"?, "error"?}'; }
  if (!isObject(v)) return 'a reply must be a JSON object';
  if (nestsDeeperThan(v)) return `a reply nests more than ${MAX_JSON_DEPTH} levels deep`;
  if (holdsNul(v)) return 'a reply holds a U+0000 character';
  if (typeof v.commandId !== 'string') return 'a reply needs commandId, the id of the command it answers';
  if (typeof v.ok !== 'boolean') return 'a reply needs ok: true or false';
  if (v.error !== undefined && typeof v.error !== 'string') return 'a reply\'s error must be a string';
  return { commandId: v.commandId, ok: v.ok, ...(v.result !== undefined && { result: v.result }), ...(typeof v.error === 'string' && { error: v.error.slice(0, MAX_REPLY_ERROR_CHARS) }) };
}
