// Battery health (batteryStatus): readings taken from frames at ingest, a status computed from the newest
// readings when asked. Thresholds: docs/concepts/diagnostics-and-collisions.md.
import type { Knex } from 'knex';
import { prepared } from '../prepared.js';

export type BatteryKind = 'rest' | 'crank' | 'charging';
export type BatteryColor = 'green' | 'yellow' | 'red';
export interface BatteryReading { kind: BatteryKind; volts: number }
export interface TimedReading extends BatteryReading { ts: Date }

/**
 * Volts. Rest: open-circuit voltage with the engine off (≈ state of charge). Crank: the lowest voltage
 * while the starter turns (SAE load-test floor 9.6 V). Charging: the system voltage with the engine running,
 * which shows whether the generator keeps the battery charged (13.0–15.0 V normal).
 */
export const BATTERY_THRESHOLDS = {
  rest: { green: 12.4, yellow: 12.0 },
  crank: { green: 10.0, yellow: 9.6 },
  charging: { green: [13.0, 15.0], yellow: [12.6, 15.5] },
} as const;

const RANK: Record<BatteryColor, number> = { green: 0, yellow: 1, red: 2 };

export function classify({ kind, volts }: BatteryReading): BatteryColor {
  if (kind === 'charging') {
    const { green, yellow } = BATTERY_THRESHOLDS.charging;
    if (volts >= green[0] && volts <= green[1]) return 'green';
    return volts >= yellow[0] && volts <= yellow[1] ? 'yellow' : 'red';
  }
  const t = BATTERY_THRESHOLDS[kind];
  return volts >= t.green ? 'green' : volts >= t.yellow ? 'yellow' : 'red';
}

interface FrameLike { kind: string; data: Record<string, unknown>; battery: { voltage: number; crankingVoltage?: number } | null }

/**
 * The readings one frame gives. The engine runs when `rpm` > 0. In a startup frame `battery.voltage` is the
 * resting voltage measured before cranking and the control module voltage is the cranking dip (unless
 * `battery.crankingVoltage` gives the dip itself). Otherwise `battery.voltage` and `controlModuleVoltage`
 * are charging readings while the engine runs and resting readings when rpm is 0 (or, for
 * `battery.voltage` and phone-home frames, when rpm is not reported).
 */
export function batteryReadings(f: FrameLike): BatteryReading[] {
  const out: BatteryReading[] = [];
  const rpm = typeof f.data.rpm === 'number' ? f.data.rpm : null;
  const running = rpm !== null && rpm > 0;
  const startup = f.kind === 'startup';
  const cmv = typeof f.data.controlModuleVoltage === 'number' ? f.data.controlModuleVoltage : null;
  const cranking = f.battery?.crankingVoltage;
  if (cranking !== undefined) out.push({ kind: 'crank', volts: cranking });
  if (f.battery) out.push({ kind: startup || !running ? 'rest' : 'charging', volts: f.battery.voltage });
  if (cmv !== null) {
    if (startup) { if (cranking === undefined) out.push({ kind: 'crank', volts: cmv }); }
    else if (running) out.push({ kind: 'charging', volts: cmv });
    else if (rpm === 0 || f.kind === 'phone-home') out.push({ kind: 'rest', volts: cmv });
  }
  return out;
}

/**
 * The current status from the newest reading of each kind: the worst colour among those taken within
 * `recentMs` of `now`, with the time of the reading that set it (the newest among equally bad ones).
 * No recent reading → status null (not an error).
 */
export function batteryStatus(readings: TimedReading[], now: Date, recentMs: number) {
  const recent = readings.filter((r) => now.getTime() - r.ts.getTime() <= recentMs);
  let best: { status: BatteryColor; timestamp: Date } | null = null;
  for (const r of recent) {
    const status = classify(r);
    if (!best || RANK[status] > RANK[best.status] || (status === best.status && r.ts > best.timestamp)) best = { status, timestamp: r.ts };
  }
  return best ?? { status: null, timestamp: null };
}

export interface ReadingRow { vehicleId: string; deviceId: string; kind: BatteryKind; volts: number; ts: Date; messageId: string }

/** Keeps the newest reading per (vehicle, device, kind); an older (late) reading never replaces a newer one. One statement. */
const UPSERT_READINGS = `
  INSERT INTO battery_readings (vehicle_id, device_id, kind, volts, ts, message_id)
  SELECT DISTINCT ON (r.vehicle_id, r.device_id, r.kind) r.vehicle_id, r.device_id, r.kind, r.volts, r.ts, r.message_id
  FROM unnest(?::uuid[], ?::uuid[], ?::text[], ?::float8[], ?::timestamptz[], ?::uuid[])
    AS r(vehicle_id, device_id, kind, volts, ts, message_id)
  ORDER BY r.vehicle_id, r.device_id, r.kind, r.ts DESC
  ON CONFLICT (vehicle_id, device_id, kind) DO UPDATE
    SET volts = EXCLUDED.volts, ts = EXCLUDED.ts, message_id = EXCLUDED.message_id
    WHERE battery_readings.ts <= EXCLUDED.ts`;

export async function storeReadings(trx: Knex, rows: ReadingRow[]): Promise<void> {
  if (!rows.length) return;
  const col = <K extends keyof ReadingRow>(k: K) => rows.map((r) => r[k]);
  await prepared(trx, UPSERT_READINGS, [col('vehicleId'), col('deviceId'), col('kind'), col('volts'),
    rows.map((r) => r.ts.toISOString()), col('messageId')]);
}
