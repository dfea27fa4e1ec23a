import { describe, expect, it } from 'vitest';
import { COMMAND_TYPE_NAMES, FINAL_STATES } from '../../lib/commands.js';
import { CONSOLE_COMMAND_TYPES, FINAL_COMMAND_STATES } from '../../console/src/command-types.js';

/** The console keeps its own copy of the command catalog's names (console/src/command-types.ts says why). */
describe("the console's command types", () => {
  it('are the catalog\'s, in its order', () => {
    expect(CONSOLE_COMMAND_TYPES.map((t) => t.name)).toEqual(COMMAND_TYPE_NAMES);
  });

  it('ask for seconds for set-interval and a JSON object for custom only', () => {
    expect(CONSOLE_COMMAND_TYPES.filter((t) => t.payload !== 'none').map((t) => [t.name, t.payload]))
      .toEqual([['set-interval', 'seconds'], ['custom', 'json']]);
  });

  it('stop following a command in the final states of the catalog', () => {
    expect(FINAL_COMMAND_STATES).toEqual(FINAL_STATES);
  });
});
