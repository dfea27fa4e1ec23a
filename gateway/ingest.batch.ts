// Pure helpers of the ingest pipeline: jobs → rows and per-device ordered batches.
import { frameUuid, uuid7 } from '../lib/uuid7.js';
import { storageReason, type DeadLetterRow, type MessageRow } from '../db/repositories/ingest.repository.js';
import type { StoredStep } from '../db/distance/steps.sql.js';
import { decodedFrameJson, type DecodedFrame } from './frame.decoder.js';
import type { DeviceBatch, IngestedMessage, IngestJob } from './ingest.types.js';

/**
 * What a frame carried besides telemetry and its GPS fix (vin, dtcs, battery, collision), kept in messages.extra: the
 * vehicles, diagnostics and collisions statements read it back. The GPS fix's extras have slots (db/message-data.sql.ts).
 */
function extraOf(f: DecodedFrame): Record<string, unknown> | null {
  const extra: Record<string, unknown> = {};
  if (f.vin) extra.vin = f.vin;
  if (f.dtcs) extra.dtcs = f.dtcs;
  if (f.battery) extra.battery = f.battery;
  if (f.collision) extra.collision = f.collision;
  return Object.keys(extra).length ? extra : null;
}

/**
 * Rows to insert and the matching messages. A message's id carries its timestamp; a frame with a frame id gets the same
 * id whenever it is re-sent (lib/uuid7.ts frameUuid), so one seen twice in the batch (a re-send that arrived before the
 * first copy committed) is stored once, and the database skips ids stored before.
 */
export function assemble(jobs: IngestJob[]) {
  const rows: MessageRow[] = [];
  const messages: IngestedMessage[] = [];
  const deadLetters: DeadLetterRow[] = [];
  const seen = new Set<string>();
  let inBatchDuplicates = 0;
  for (const job of jobs) {
    deadLetters.push(...job.deadLetters);
    for (const f of job.frames) {
      const ms = f.ts.getTime();
      const id = f.frameId === null ? uuid7(ms) : frameUuid(ms, job.deviceId, f.frameId);
      if (f.frameId !== null) {
        if (seen.has(id)) { inBatchDuplicates++; continue; }
        seen.add(id);
      }
      rows.push({
        id, deviceId: job.deviceId, timestamp: f.ts, kind: f.kind, data: f.data, gps: f.gps,
        lon: f.lon, lat: f.lat, extra: extraOf(f), receivedAt: job.receivedAt,
      });
      messages.push({
        id, deviceId: job.deviceId, timestamp: f.ts, kind: f.kind, frameId: f.frameId, data: f.data, lat: f.lat, lon: f.lon,
        gps: f.gps, vin: f.vin, dtcs: f.dtcs, battery: f.battery, collision: f.collision, receivedAt: job.receivedAt, vehicleId: null,
      });
    }
  }
  return { rows, messages, deadLetters, inBatchDuplicates };
}

/** Messages grouped by device, each group in timestamp order (a stable sort keeps arrival order for ties). */
export function deviceBatches(messages: IngestedMessage[], latest: Map<string, Date>): DeviceBatch[] {
  const groups = new Map<string, IngestedMessage[]>();
  for (const m of messages) {
    const list = groups.get(m.deviceId);
    if (list) list.push(m);
    else groups.set(m.deviceId, [m]);
  }
  return [...groups].map(([deviceId, list]) => ({
    deviceId,
    messages: list.sort((a, b) => a.timestamp.getTime() - b.timestamp.getTime()),
    previousLatest: latest.get(deviceId) ?? null,
  }));
}

/**
 * The batch's devices as the stages see them once it is inserted: its stored messages (`inserted`: the insert's rows,
 * storedBatch) by device (deviceBatches), each with the distance step the insert measured, and the device's frames the
 * insert skipped (stored before: re-sends) as `skipped`. A device whose frames were all skipped has no batch.
 */
export function storedDeviceBatches(messages: IngestedMessage[], inserted: Map<string, StoredStep>, latest: Map<string, Date>): DeviceBatch[] {
  const fresh: IngestedMessage[] = [];
  const skipped: IngestedMessage[] = [];
  for (const m of messages) {
    const step = inserted.get(m.id);
    if (step) {
      m.step = step;
      fresh.push(m);
    } else skipped.push(m);
  }
  const devices = deviceBatches(fresh, latest);
  if (skipped.length) {
    const byDevice = new Map(devices.map((d) => [d.deviceId, d]));
    for (const m of skipped) {
      const d = byDevice.get(m.deviceId);
      if (d) (d.skipped ??= []).push(m);
    }
  }
  return devices;
}

/** A job cut into one job per frame (the payload's dead letters travel with the first), to isolate a frame that cannot be stored. */
export function splitJob(job: IngestJob): IngestJob[] {
  if (job.frames.length <= 1) return [job];
  return job.frames.map((frame, i) => ({
    ...job, frames: [frame], frameIndexes: [job.frameIndexes[i]], deadLetters: i === 0 ? job.deadLetters : [],
  }));
}

/**
 * Dead letters for a job the database refused even alone: each frame as decoded (the job holds no raw frames, and
 * the whole payload kept for each frame multiplied it), with the database's reason without its SQL text (storageReason).
 */
export function poisonLetters(job: IngestJob, err: Error): DeadLetterRow[] {
  const reason = storageReason(err);
  return [
    ...job.deadLetters,
    ...job.frameIndexes.map((index, k) => ({
      deviceId: job.deviceId, topic: job.topic, frameIndex: index, reason: `frame ${index}: ${reason}`,
      raw: job.frames[k] ? decodedFrameJson(job.frames[k]) : job.payload, receivedAt: job.receivedAt,
    })),
  ];
}
