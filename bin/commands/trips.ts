import type { Command } from 'commander';
import { CliError, createClient, output, table, type Client } from '../client.js';
import type { DummyView, ReportCardView, TripView } from '../api-types.js';
import { withClientOptions } from './common.js';
import { listAll, pick } from './routes.js';

type CardView = Pick<ReportCardView, 'grade' | 'score'>;

const km = (m: number | null | undefined) => (m === null || m === undefined ? '-' : `${(m / 1000).toFixed(2)} km`);
const duration = (ms: number) => `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
const num = (v: number | null | undefined, d = 1) => (v === null || v === undefined ? '-' : v.toFixed(d));

/** A trip's report card grade, or null while it has none (open trip). */
export async function gradeOf(client: Client, tripId: string): Promise<CardView | null> {
  try {
    return (await client.api<{ reportCard: ReportCardView }>('GET', `/api/v1/trips/${tripId}/report_cards/_current`)).reportCard;
  } catch {
    return null;
  }
}

/** One line: distance, duration, grade (what `runs start --wait` ends with). */
export function tripLine(t: TripView, card: CardView | null): string {
  return `Trip ${t.id} (${t.status}): ${km(t.stats.distance)}, ${duration(t.stats.duration)}, grade ${card?.grade ?? '-'}`;
}

function describeTrip(t: TripView, card: CardView | null): string {
  const s = t.stats;
  return [
    tripLine(t, card),
    `  device:    ${t.deviceId}   vehicle: ${t.vehicleId ?? '-'}`,
    `  from:      ${t.start} (${t.meta.startReason})`,
    `  to:        ${t.stop ?? 'open'}${t.meta.endReason ? ` (${t.meta.endReason})` : ''}`,
    `  distance:  GPS ${km(s.distanceByGPS)}, speed sensor ${km(s.distanceByVSS)}`,
    `  speed:     average ${num(s.averageSpeed)} km/h, moving ${num(s.averageMovingSpeed)} ± ${num(s.stdDevMovingSpeed)} km/h, max ${num(s.maxSpeed)} km/h`,
    `  events:    ${s.hardBrakeCount ?? '-'} hard brakes, ${s.hardAccelCount ?? '-'} hard accelerations, ${s.stopCount} stops`,
    `  fuel:      ${num(s.fuelConsumed, 3)} L, ${num(s.fuelEconomy)} mpg, average load ${num(s.averageLoad)} %`,
    `  data:      ${s.messageCount} messages, ${s.locationCount} locations${s.substantial ? '' : ' (not substantial)'}`,
    ...(card ? [`  grade:     ${card.grade}${card.score === null ? '' : ` (${card.score.toFixed(2)} penalty points per 10 km, over at least 16 km)`}`] : []),
  ].join('\n');
}

/** The device id behind --device (an id) or --dummy (a dummy's name or id). */
async function deviceOf(client: Client, o: { device?: string; dummy?: string }): Promise<string> {
  if (o.device) return o.device;
  const dummies = await listAll<DummyView>(client, '/api/v1/dummies', 'dummies');
  return pick(dummies, o.dummy!, 'dummy', "see 'drivewire dummies list'").deviceId;
}

/** `drivewire trips list|show`: a device's or vehicle's trips, one trip in full. */
export function registerTripCommands(program: Command): void {
  const trips = program.command('trips').description('trips of a device or vehicle');
  withClientOptions(trips.command('list').description('trips of a device, dummy or vehicle, newest first (open ones too)'))
    .option('--device <id>', 'device id').option('--dummy <ref>', 'dummy name or id').option('--vehicle <id>', 'vehicle id')
    .option('--limit <n>', 'how many (at most 100)', '10')
    .action(async (o) => {
      if ([o.device, o.dummy, o.vehicle].filter(Boolean).length !== 1) throw new CliError('give one of --device, --dummy or --vehicle');
      const client = createClient(o);
      const base = o.vehicle ? `/api/v1/vehicles/${o.vehicle}` : `/api/v1/devices/${await deviceOf(client, o)}`;
      const { trips: list } = await client.api<{ trips: TripView[] }>('GET', `${base}/trips?limit=${encodeURIComponent(o.limit)}`);
      output(o.json, list, () => (list.length ? table(list.map((t) => ({
        id: t.id, start: t.start, status: t.status, distance: km(t.stats.distance), duration: duration(t.stats.duration),
        'avg km/h': num(t.stats.averageSpeed), 'hard brakes': t.stats.hardBrakeCount ?? '-', end: t.meta.endReason ?? '-',
      })), ['id', 'start', 'status', 'distance', 'duration', 'avg km/h', 'hard brakes', 'end']) : 'No trips.'));
    });
  withClientOptions(trips.command('show <tripId>').description('one trip: statistics, start and end reasons, grade'))
    .action(async (tripId: string, o) => {
      const client = createClient(o);
      const { trip } = await client.api<{ trip: TripView }>('GET', `/api/v1/trips/${tripId}`);
      const card = await gradeOf(client, trip.id);
      output(o.json, { ...trip, reportCard: card }, () => describeTrip(trip, card));
    });
}

/**
 * The trip a finished run drove: the device's newest trip that started no earlier than the run's first frame
 * can be stamped (frames are stamped so the last one is sent now, so the first is at least `startedAt` minus
 * the drive's duration). Waits up to `waitMs` for it to complete.
 */
export async function tripOfRun(client: Client, deviceId: string, startedAt: string, durationMs: number, waitMs = 10_000): Promise<TripView | null> {
  const from = Date.parse(startedAt) - durationMs - 1_000;
  const until = Date.now() + waitMs;
  for (;;) {
    const { trips: list } = await client.api<{ trips: TripView[] }>('GET', `/api/v1/devices/${deviceId}/trips?limit=5`);
    const trip = list.find((t) => Date.parse(t.start) >= from) ?? null;
    if ((trip && trip.status === 'completed') || Date.now() > until) return trip;
    await new Promise((r) => setTimeout(r, 250));
  }
}
