/**
 * The command types the console offers, as lib/commands.ts (COMMAND_TYPES) defines them, with what the box asks for
 * each. A copy, not an import: lib/commands.ts validates with Node's Buffer and lib/errors.ts, which the browser
 * build and the console's DOM-only type check do not have; test/console/command-types.test.ts keeps the two equal.
 */
export interface ConsoleCommandType {
  name: string;
  /** What the device does, in a line. */
  hint: string;
  /** The field the payload comes from: none, a seconds field, or a JSON object. */
  payload: 'none' | 'seconds' | 'json';
}

export const CONSOLE_COMMAND_TYPES: readonly ConsoleCommandType[] = [
  { name: 'ping', hint: 'Answers at once: a liveness check.', payload: 'none' },
  { name: 'set-interval', hint: 'Sets the seconds between telemetry frames.', payload: 'seconds' },
  { name: 'request-vin', hint: "Replies with the vehicle's VIN.", payload: 'none' },
  { name: 'request-dtcs', hint: 'Replies with the trouble codes stored now.', payload: 'none' },
  { name: 'clear-dtcs', hint: 'Clears the stored trouble codes and lists those it cleared.', payload: 'none' },
  { name: 'reboot', hint: 'Replies, then disconnects and connects again.', payload: 'none' },
  { name: 'custom', hint: 'An opaque JSON object for the device; the platform reads neither it nor the reply.', payload: 'json' },
];

/** States a command leaves no more (lib/commands.ts FINAL_STATES): the console stops polling it then. */
export const FINAL_COMMAND_STATES: readonly string[] = ['succeeded', 'failed', 'expired', 'cancelled'];
