// A PUBLISH on devices/<id>/frames → an ingest job: the good frames, and a dead letter for each refusal.
import { decodedFrameJson, decodePayload, type DecodedFrame, type RefusedFrame } from './frame.decoder.js';
import { holdsNul } from '../lib/json-bounds.js';
import type { DeadLetterRow } from '../db/repositories/ingest.repository.js';
import type { IngestJob } from './ingest.pipeline.js';

export interface Uplink {
  job: IngestJob;
  /** Frames in the payload (a payload refused as a whole counts as one). */
  received: number;
  /** Reasons of the refused frames or payload, in order. */
  refusals: string[];
  /** Unknown fields the accepted frames carried (ignored), one entry per frame that had each. */
  ignoredFields: string[];
}

/**
 * PostgreSQL text and jsonb cannot hold U+0000; refusing such a frame here keeps it from failing a whole batch. Its
 * dead letter keeps the frame as decoded (`raw` null would keep the whole payload for each such frame).
 */
function nulProblem(f: DecodedFrame, index: number): (RefusedFrame & { bytes: Buffer }) | null {
  if (!holdsNul(f.frameId) && !holdsNul(f.data) && !holdsNul(f.collision)) return null;
  const reason = `frame ${index}: value contains a NUL character (\\u0000), which cannot be stored`;
  return { index, frameId: f.frameId, reason, raw: null, bytes: decodedFrameJson(f) };
}

/** `maxFutureSkewMs`: how far ahead of `now` a frame's ts may be (lib/config.ts maxFutureSkewMs). */
export function uplinkJob(deviceId: string, topic: string, payload: Buffer, maxBytes: number, now = new Date(),
  maxFutureSkewMs?: number): Uplink {
  const letter = (frameIndex: number | null, reason: string, raw: Buffer): DeadLetterRow =>
    ({ deviceId, topic, frameIndex, reason, raw: raw.subarray(0, maxBytes), receivedAt: now });
  const job: IngestJob = { deviceId, topic, payload, frames: [], frameIndexes: [], deadLetters: [], receivedAt: now };
  const decoded = decodePayload(payload, { now, maxBytes, maxFutureSkewMs });
  if (decoded.payloadError) {
    job.deadLetters.push(letter(null, decoded.payloadError, payload));
    return { job, received: 1, refusals: [decoded.payloadError], ignoredFields: [] };
  }
  const refused = new Map<number, RefusedFrame & { bytes?: Buffer }>(decoded.refused.map((r) => [r.index, r]));
  // JSON text holds U+0000 only as the escape \u0000 (a raw control character is not JSON): without one in the
  // payload no frame needs walking (the walk costs CPU on every payload)
  const mayHoldNul = payload.includes('\\u0000');
  const total = decoded.frames.length + decoded.refused.length;
  let next = 0;
  const ignoredFields: string[] = [];
  for (let index = 0; index < total; index++) {
    if (refused.has(index)) continue;
    const frame = decoded.frames[next++];
    const nul = mayHoldNul ? nulProblem(frame, index) : null;
    if (nul) { refused.set(index, nul); continue; }
    job.frames.push(frame);
    for (const field of frame.ignoredFields ?? []) ignoredFields.push(field); // not push(...): a frame may have 40,000
    job.frameIndexes.push(index);
  }
  const refusals = [...refused.values()].sort((a, b) => a.index - b.index);
  for (const r of refusals) {
    job.deadLetters.push(letter(r.index, r.reason, r.bytes ?? (r.raw === null ? payload : Buffer.from(JSON.stringify(r.raw) ?? 'null'))));
  }
  return { job, received: total, refusals: refusals.map((r) => r.reason), ignoredFields };
}
