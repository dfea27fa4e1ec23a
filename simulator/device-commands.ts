// What a simulated device answers to the platform's commands (lib/commands.ts; docs/concepts/simulator.md#commands):
// one CommandReply per CommandMessage, the same reply again for a redelivered commandId without applying it twice.
import { COMMAND_TYPES, COMMAND_TYPE_NAMES, type CommandMessage, type CommandReply } from '../lib/commands.js';
import { ValidationError } from '../lib/errors.js';

/** The device state the commands read and change. */
export interface CommandTarget {
  vin: string;
  /** Sets ms between telemetry frames from the last one sent on; returns the ms applied. */
  setIntervalMs(ms: number): number;
  /** Trouble codes the device's frames report now. */
  dtcs(): string[];
  /** Clears them for the rest of the run; returns the codes cleared. */
  clearDtcs(): string[];
}

export interface CommandAnswer {
  reply: CommandReply;
  /** `reboot`: disconnect and connect again once the reply is acknowledged. */
  reboot?: boolean;
}

/** pino-compatible subset. */
interface DebugLogger { debug(obj: object, msg?: string): void }

export interface ResponderOptions {
  /** The `unresponsive` scenario: every command is received and left unanswered, nothing applied. */
  silent?: boolean;
  log: DebugLogger;
  deviceId: string;
}

export interface CommandResponder {
  /** The answer to a message on the commands topic; null when it gets none (not a command, or silent). */
  answer(text: string): CommandAnswer | null;
}

/** Replies kept for redeliveries; a run receives far fewer commands. */
const KEPT_REPLIES = 1000;

export function createCommandResponder(target: CommandTarget, opts: ResponderOptions): CommandResponder {
  const answered = new Map<string, CommandReply>();
  return {
    answer(text) {
      const msg = parseCommand(text);
      if (typeof msg === 'string') {
        opts.log.debug({ deviceId: opts.deviceId, reason: msg }, 'ignored a message on the commands topic');
        return null;
      }
      if (opts.silent) {
        opts.log.debug({ deviceId: opts.deviceId, commandId: msg.commandId, type: msg.type }, 'unresponsive: command left unanswered');
        return null;
      }
      const earlier = answered.get(msg.commandId);
      if (earlier) return { reply: earlier };
      const { result, error, reboot } = apply(target, msg);
      const reply: CommandReply = error === undefined ? { commandId: msg.commandId, ok: true, result } : { commandId: msg.commandId, ok: false, error };
      answered.set(msg.commandId, reply);
      if (answered.size > KEPT_REPLIES) answered.delete(answered.keys().next().value!);
      return { reply, ...(reboot && { reboot }) };
    },
  };
}

interface Outcome { result?: unknown; error?: string; reboot?: boolean }

function apply(target: CommandTarget, msg: CommandMessage): Outcome {
  if (!Object.hasOwn(COMMAND_TYPES, msg.type)) {
    return { error: `unknown command type "${msg.type}"; known: ${COMMAND_TYPE_NAMES.join(', ')}` };
  }
  let payload: Record<string, unknown> | null;
  try {
    payload = COMMAND_TYPES[msg.type].payload(msg.payload);
  } catch (err) {
    if (err instanceof ValidationError) return { error: err.message };
    throw err;
  }
  switch (msg.type) {
    case 'ping': return { result: {} };
    case 'set-interval': return { result: { seconds: target.setIntervalMs((payload!.seconds as number) * 1000) / 1000 } };
    case 'request-vin': return { result: { vin: target.vin } };
    case 'request-dtcs': return { result: { codes: target.dtcs() } };
    case 'clear-dtcs': return { result: { cleared: target.clearDtcs() } };
    case 'reboot': return { result: {}, reboot: true };
    case 'custom': return { result: { echo: payload } };
    default: return { error: `command type "${msg.type}" is not implemented by the simulator` };
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The message as a CommandMessage, or why it is not one. */
export function parseCommand(text: string): CommandMessage | string {
  let v: unknown;
  try { v = JSON.parse(text); } catch { return 'not JSON'; }
  if (!isObject(v)) return 'not a JSON object';
  if (typeof v.commandId !== 'string' || !v.commandId) return 'no commandId';
  if (typeof v.type !== 'string') return 'no type';
  if (v.payload !== null && !isObject(v.payload)) return 'payload is neither an object nor null';
  if (typeof v.expiresAt !== 'string') return 'no expiresAt';
  return { commandId: v.commandId, type: v.type, payload: v.payload as Record<string, unknown> | null, expiresAt: v.expiresAt };
}
