import fs from 'node:fs';
import type { Command } from 'commander';
import { CliError, createClient, output, table, type Client } from '../client.js';
import type { RuleSummaryView, RuleView } from '../api-types.js';
import { withClientOptions } from './common.js';
import { deviceOf } from './commands.js';
import { listAll, resolveRoute } from './routes.js';

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
type Day = typeof DAYS[number];
type Position = [number, number];
type Window = { days: Day[]; from: string; until: string };

/** A number option; a value that is not a number is an error naming the option. Ranges are the API's to check. */
function numberOf(raw: string | undefined, flag: string, what: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n)) throw new CliError(`${flag} must be ${what}, got "${raw}"`);
  return n;
}

/** `lon,lat,meters` as the radius boundary's fields. */
function parseRadius(raw: string): { lon: number; lat: number; radius: number } {
  const parts = raw.split(',').map((s) => s.trim());
  const nums = parts.map(Number);
  if (parts.length !== 3 || parts.some((s) => s === '') || !nums.every(Number.isFinite)) {
    throw new CliError(`--radius must be lon,lat,meters (three numbers, e.g. -96.8,32.78,500), got "${raw}"`);
  }
  return { lon: nums[0], lat: nums[1], radius: nums[2] };
}

/** Inline JSON (the value starts with { or [) or the JSON in the file the value names. */
function jsonOf(raw: string, flag: string, expected: string): unknown {
  let text = raw;
  if (!/^\s*[[{]/.test(raw)) {
    try {
      text = fs.readFileSync(raw, 'utf8');
    } catch (err) {
      throw new CliError(`${flag} must be a JSON file or inline JSON (${expected}): cannot read ${raw}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`${flag} must be ${expected} as JSON: ${(err as Error).message}`);
  }
}

const isPosition = (v: unknown): v is Position => Array.isArray(v) && v.length >= 2 && v.every((n) => typeof n === 'number');

/** The coordinates of a GeoJSON geometry of `type` given as the geometry, a Feature of it, or the bare coordinates. */
function coordinatesOf(value: unknown, type: 'Polygon' | 'LineString'): unknown[] | null {
  const v = value as { type?: string; geometry?: unknown; coordinates?: unknown } | null;
  if (v && !Array.isArray(v) && v.type === 'Feature') return coordinatesOf(v.geometry, type);
  if (v && !Array.isArray(v) && v.type === type && Array.isArray(v.coordinates)) return v.coordinates;
  return Array.isArray(value) ? value : null;
}

function parsePolygon(raw: string): unknown[] {
  const expected = 'a GeoJSON Polygon or its coordinates (rings of [lon, lat])';
  const coordinates = coordinatesOf(jsonOf(raw, '--polygon', expected), 'Polygon');
  if (!coordinates || coordinates.length === 0) throw new CliError(`--polygon must be ${expected}`);
  // one ring given as a bare list of positions: the polygon of that ring
  return isPosition(coordinates[0]) ? [coordinates] : coordinates;
}

function parseCorridor(raw: string): unknown[] {
  const expected = 'a GeoJSON LineString or its coordinates ([lon, lat] positions)';
  const coordinates = coordinatesOf(jsonOf(raw, '--corridor', expected), 'LineString');
  if (!coordinates || !coordinates.every(isPosition)) throw new CliError(`--corridor must be ${expected}`);
  return coordinates;
}

/**
 * `mon-fri 08:00-18:00,sat 09:00-13:00` as the windows of activeHours: comma-separated windows, each a day or a day
 * range (mon-fri; a range may wrap, fri-mon is fri, sat, sun, mon) and a from-until time. Whether the times make a
 * valid window (until before from spans midnight) is the API's to say.
 */
export function parseActiveHours(raw: string): Window[] {
  const bad = (part: string) => new CliError(
    `--active-hours must be windows like "mon-fri 08:00-18:00,sat 09:00-13:00" (days mon..sun, times HH:MM), got "${part}"`);
  const time = /^([01]\d|2[0-3]):[0-5]\d$/;
  const parts = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (!parts.length) throw bad(raw);
  return parts.map((part): Window => {
    const m = /^([a-z]{3})(?:-([a-z]{3}))?\s+(\S+)-(\S+)$/i.exec(part);
    if (!m) throw bad(part);
    const start = DAYS.indexOf(m[1].toLowerCase() as Day);
    const end = m[2] === undefined ? start : DAYS.indexOf(m[2].toLowerCase() as Day);
    if (start < 0 || end < 0 || !time.test(m[3]) || !time.test(m[4])) throw bad(part);
    const days: Day[] = [];
    for (let i = start; ; i = (i + 1) % 7) {
      days.push(DAYS[i]);
      if (i === end) break;
    }
    return { days, from: m[3], until: m[4] };
  });
}

interface CreateOptions {
  name: string; radius?: string; polygon?: string; corridor?: string; corridorRoute?: string; width?: string;
  parameter?: string; min?: string; max?: string; buffer?: string; deadband?: string;
  minInside?: string; minOutside?: string; crossings?: boolean; activeHours?: string; timeZone?: string;
}

/** The body of POST /api/v1/devices/{id}/rules from the options (the route of --corridor-route read through the API). */
async function ruleBody(client: Client, o: CreateOptions): Promise<{ rule: Record<string, unknown> }> {
  const geographic = (['radius', 'polygon', 'corridor', 'corridorRoute'] as const).filter((k) => o[k] !== undefined);
  if (geographic.length > 1) throw new CliError('Give at most one of --radius, --polygon, --corridor and --corridor-route (a rule has at most one geographic boundary)');
  const corridor = o.corridor !== undefined || o.corridorRoute !== undefined;
  if (o.width !== undefined && !corridor) throw new CliError('--width is the width of a corridor: give --corridor or --corridor-route with it');
  if (corridor && o.width === undefined) throw new CliError('--width <meters> is required with --corridor and --corridor-route');
  if (o.buffer !== undefined && !geographic.length) throw new CliError('--buffer is on a geographic boundary: give --radius, --polygon, --corridor or --corridor-route with it');
  if (o.parameter === undefined) {
    for (const flag of ['min', 'max', 'deadband'] as const) {
      if (o[flag] !== undefined) throw new CliError(`--${flag} is on a parametric boundary: give --parameter <key> with it`);
    }
  }
  if (!geographic.length && o.parameter === undefined) {
    throw new CliError('Give a boundary: --radius, --polygon, --corridor or --corridor-route, and/or --parameter');
  }
  if ((o.activeHours === undefined) !== (o.timeZone === undefined)) {
    throw new CliError(o.activeHours === undefined ? '--time-zone is the zone of --active-hours: give --active-hours with it'
      : '--time-zone <IANA zone> is required with --active-hours, e.g. --time-zone America/Chicago');
  }

  const boundaries: Record<string, unknown>[] = [];
  const bufferMeters = numberOf(o.buffer, '--buffer', 'a number of meters');
  const buffer = bufferMeters === undefined ? {} : { bufferMeters };
  if (o.radius !== undefined) boundaries.push({ type: 'radius', ...parseRadius(o.radius), ...buffer });
  if (o.polygon !== undefined) boundaries.push({ type: 'polygon', coordinates: parsePolygon(o.polygon), ...buffer });
  if (corridor) {
    const widthMeters = numberOf(o.width, '--width', 'a number of meters');
    // a stored route's line is its preview, an encoded polyline the API takes as it is
    const line = o.corridor !== undefined ? { coordinates: parseCorridor(o.corridor) } : { polyline: (await resolveRoute(client, o.corridorRoute!)).preview };
    boundaries.push({ type: 'corridor', ...line, widthMeters, ...buffer });
  }
  if (o.parameter !== undefined) {
    const deadband = numberOf(o.deadband, '--deadband', "a number in the parameter's unit");
    boundaries.push({
      type: 'parametric', parameter: o.parameter,
      min: numberOf(o.min, '--min', 'a number') ?? null, max: numberOf(o.max, '--max', 'a number') ?? null,
      ...(deadband !== undefined && { deadband }),
    });
  }
  const minInsideSeconds = numberOf(o.minInside, '--min-inside', 'a number of seconds');
  const minOutsideSeconds = numberOf(o.minOutside, '--min-outside', 'a number of seconds');
  return {
    rule: {
      name: o.name, boundaries,
      ...(minInsideSeconds !== undefined && { minInsideSeconds }),
      ...(minOutsideSeconds !== undefined && { minOutsideSeconds }),
      ...(o.crossings && { detectCrossings: true }),
      ...(o.activeHours !== undefined && { activeHours: { timeZone: o.timeZone, windows: parseActiveHours(o.activeHours) } }),
    },
  };
}

function describeBoundary(b: RuleView['boundaries'][number]): string {
  const buffer = b.bufferMeters !== undefined ? ` (buffer ${b.bufferMeters} m)` : '';
  if (b.type === 'radius') return `radius ${b.radius} m around ${b.lon},${b.lat}${buffer}`;
  if (b.type === 'polygon') return `polygon of ${(b.coordinates?.[0] ?? []).length} positions${(b.coordinates?.length ?? 0) > 1 ? ` and ${b.coordinates!.length - 1} hole(s)` : ''}${buffer}`;
  if (b.type === 'corridor') return `corridor ${b.widthMeters} m either side of a line of ${b.coordinates?.length ?? 0} positions${buffer}`;
  const range = `${b.min ?? '-∞'}..${b.max ?? '∞'}`;
  return `${b.parameter} in ${range}${b.deadband !== undefined ? ` (deadband ${b.deadband})` : ''}`;
}

const windowText = (w: { days: string[]; from: string; until: string }) => `${w.days.join(',')} ${w.from}-${w.until}`;

/** The options a rule was created with, one line each; none: nothing. */
/** The options a rule has, each as [label, text]. */
function options(r: RuleSummaryView): [string, string][] {
  return [
    ...(r.minInsideSeconds !== undefined ? [['min inside', `${r.minInsideSeconds} s`] as [string, string]] : []),
    ...(r.minOutsideSeconds !== undefined ? [['min outside', `${r.minOutsideSeconds} s`] as [string, string]] : []),
    ...(r.detectCrossings ? [['crossings', 'detected between fixes'] as [string, string]] : []),
    ...(r.activeHours ? [['active hours', `${r.activeHours.windows.map(windowText).join('; ')} (${r.activeHours.timeZone})`] as [string, string]] : []),
  ];
}

const state = (r: RuleSummaryView) => (r.evaluated ? (r.covered ? 'covered' : 'not covered') : 'not evaluated yet');

function describeRule(r: RuleView): string {
  return [
    `Rule "${r.name}"`, `  id:           ${r.id}`, `  device:       ${r.deviceId}`,
    ...r.boundaries.map((b, i) => `  ${i ? '              ' : 'boundaries:   '}${describeBoundary(b)}`),
    ...options(r).map(([label, text]) => `  ${`${label}:`.padEnd(14)}${text}`),
    `  state:        ${state(r)}`,
  ].join('\n');
}

/** `drivewire rules create|list|delete`: a device's rules, through the API (docs/concepts/rules-events-webhooks.md). */
export function registerRuleCommands(program: Command): void {
  const rules = program.command('rules').description('rules on a device: enter and leave events for geographic and parametric boundaries (docs/concepts/rules-events-webhooks.md)');

  withClientOptions(rules.command('create').description('create a rule on a device: at most one geographic boundary and/or a parametric one'))
    .argument('<device>', "device id, or a dummy's name or id")
    .requiredOption('--name <name>', 'rule name')
    .option('--radius <lon,lat,meters>', 'geographic: a circle of that many meters around the point')
    .option('--polygon <json>', 'geographic: a GeoJSON Polygon or its coordinates, inline JSON or a .json file')
    .option('--corridor <json>', 'geographic: within --width meters of a GeoJSON LineString or its coordinates, inline JSON or a .json file')
    .option('--corridor-route <route>', "geographic: within --width meters of a stored route's path (name or id, see 'drivewire routes list')")
    .option('--width <meters>', 'corridor: meters either side of the line a position is inside (required with a corridor)')
    .option('--buffer <meters>', 'geographic: meters beyond the fence a device must go to count as outside again')
    .option('--parameter <key>', 'parametric: a decimal telemetry parameter, e.g. vehicleSpeed, inside from --min to --max')
    .option('--min <n>', 'parametric: inclusive lower bound (default: unbounded)')
    .option('--max <n>', 'parametric: inclusive upper bound (default: unbounded)')
    .option('--deadband <n>', "parametric: how far past a bound, in the parameter's unit, the value must go to count as outside again")
    .option('--min-inside <seconds>', 'dwell: an enter only once the device has been inside this long')
    .option('--min-outside <seconds>', 'dwell: a leave only once the device has been outside this long')
    .option('--crossings', 'a straight segment between two fixes through the geographic boundary gives the enter and leave it implies')
    .option('--active-hours <windows>', 'when the rule reads messages, e.g. "mon-fri 08:00-18:00,sat 09:00-13:00" (ranges may wrap: fri-mon); needs --time-zone')
    .option('--time-zone <zone>', 'IANA time zone of --active-hours, e.g. America/Chicago')
    .action(async (ref: string, o) => {
      const client = createClient(o);
      const body = await ruleBody(client, o as CreateOptions);
      const deviceId = await deviceOf(client, ref);
      const { rule } = await client.api<{ rule: RuleView }>('POST', `/api/v1/devices/${deviceId}/rules`, body);
      output(o.json, rule, () => `Created ${describeRule(rule)}`);
    });

  withClientOptions(rules.command('list').description("list a device's rules, newest first"))
    .argument('<device>', "device id, or a dummy's name or id")
    .action(async (ref: string, o) => {
      const client = createClient(o);
      const list = await listAll<RuleSummaryView>(client, `/api/v1/devices/${await deviceOf(client, ref)}/rules`, 'rules');
      output(o.json, list, () => table(list.map((r) => ({
        name: r.name, id: r.id, state: state(r),
        options: options(r).map(([label, text]) => `${label} ${text}`).join(', '),
        createdAt: r.createdAt,
      })), ['name', 'id', 'state', 'options', 'createdAt']));
    });

  withClientOptions(rules.command('delete').description('delete a rule (rules are immutable: delete and create to change one)'))
    .argument('<rule>', 'rule id')
    .action(async (id: string, o) => {
      await createClient(o).api('DELETE', `/api/v1/rules/${encodeURIComponent(id)}`);
      output(o.json, { deleted: id }, () => `Deleted rule ${id}`);
    });
}
