import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { CliError, createClient, output, table, type Client } from '../client.js';
import type { OffsetPage, RouteView } from '../api-types.js';
import { withClientOptions } from './common.js';

/** Every item of an offset-paginated list (pages of 100). */
export async function listAll<T, K extends string = string>(client: Client, urlPath: string, key: K): Promise<T[]> {
  const items: T[] = [];
  let url: string | undefined = `${urlPath}?limit=100`;
  while (url) {
    const page: OffsetPage<K, T> = await client.api<OffsetPage<K, T>>('GET', url);
    items.push(...page[key]);
    url = page.meta.pagination.links.next;
  }
  return items;
}

/** A record by id, exact name, or name in any case (one match only). */
export function pick<T extends { id: string; name: string }>(items: T[], ref: string, what: string, hint: string): T {
  const byId = items.find((i) => i.id === ref) ?? items.find((i) => i.name === ref);
  if (byId) return byId;
  const loose = items.filter((i) => i.name.toLowerCase() === ref.toLowerCase());
  if (loose.length === 1) return loose[0];
  if (loose.length > 1) throw new CliError(`"${ref}" matches ${loose.length} ${what}s (${loose.map((i) => i.id).join(', ')}); give the id`);
  throw new CliError(`No ${what} named or with id "${ref}"; ${hint}`);
}

export async function resolveRoute(client: Client, ref: string): Promise<RouteView> {
  return pick(await listAll<RouteView>(client, '/api/v1/routes', 'routes'), ref, 'route', "see 'drivewire routes list'");
}

const km = (m: number) => `${(m / 1000).toFixed(2)} km`;
const minutes = (ms: number) => `${(ms / 60_000).toFixed(1)} min`;

function describeRoute(r: RouteView): string {
  return [
    `${r.name}`, `  id:          ${r.id}`, `  distance:    ${km(r.distanceByGPS)} (GPS), ${km(r.distanceByVSS)} (speed sensor)`,
    `  duration:    ${minutes(r.duration)}`, `  messages:    ${r.messageCount} (${r.locationCount} with a location)`,
    ...(r.description ? [`  description: ${r.description}`] : []),
  ].join('\n');
}

/** `drivewire routes import|list|show`: the routes dummies drive, through the API. */
export function registerRouteCommands(program: Command): void {
  const routes = program.command('routes').description('routes for dummy devices');

  withClientOptions(routes.command('import').description('import a GeoJSON, GPX or encoded-polyline file as a route'))
    .argument('<file>', 'route file')
    .option('--name <name>', 'route name (default: the name in the file, else the file name)')
    .option('--description <text>', 'description')
    .option('--duration <ms>', 'how long the drive takes at speed 1, in ms (default: estimated for an urban drive)')
    .action(async (file: string, o) => {
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (err) {
        throw new CliError(`Cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      const duration = o.duration === undefined ? undefined : Number(o.duration);
      if (duration !== undefined && !(duration > 0)) throw new CliError(`--duration must be a number of milliseconds > 0, got "${o.duration}"`);
      const body = { route: { file: text, fileName: path.basename(file), name: o.name, description: o.description, duration } };
      const { route } = await createClient(o).api<{ route: RouteView }>('POST', '/api/v1/routes', body);
      output(o.json, route, () => `Imported route\n${describeRoute(route)}`);
    });

  withClientOptions(routes.command('list').description('list the routes')).action(async (o) => {
    const list = await listAll<RouteView>(createClient(o), '/api/v1/routes', 'routes');
    output(o.json, list, () => table(list.map((r) => ({
      name: r.name, id: r.id, distance: km(r.distanceByGPS), duration: minutes(r.duration), messages: r.messageCount,
    })), ['name', 'id', 'distance', 'duration', 'messages']));
  });

  withClientOptions(routes.command('show').description('show one route'))
    .argument('<route>', 'route name or id')
    .action(async (ref: string, o) => {
      const route = await resolveRoute(createClient(o), ref);
      output(o.json, route, () => describeRoute(route));
    });
}
