// Scenario names a run can ask for (see frames.ts for what each one puts on the wire; `unresponsive` is the
// device's: it receives commands and never answers them, device-commands.ts).

export const SCENARIOS = ['hard-brake', 'hard-accel', 'dtc', 'weak-battery', 'collision', 'gps-gap', 'duplicates', 'unresponsive'] as const;
export type Scenario = (typeof SCENARIOS)[number];

export function isScenario(name: string): name is Scenario {
  return (SCENARIOS as readonly string[]).includes(name);
}

/** Parses "hard-brake,dtc" or a list; throws naming every unknown scenario. */
export function parseScenarios(input: string | readonly string[]): Scenario[] {
  const names = (typeof input === 'string' ? input.split(',') : [...input]).map((s) => s.trim()).filter(Boolean);
  const unknown = names.filter((n) => !isScenario(n));
  if (unknown.length) {
    throw new RangeError(`unknown scenario ${unknown.map((u) => `"${u}"`).join(', ')}; known: ${SCENARIOS.join(', ')}`);
  }
  return [...new Set(names)] as Scenario[];
}
