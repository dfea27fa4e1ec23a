import type { Knex } from 'knex';

/**
 * Frames of one simulator pass the platform stored: their ids are "<runId>-<n>" (simulator/frames.ts).
 * A broker acknowledges a QoS 1 frame, but only drivewire's gateway acknowledges after storing it, so
 * this count tells a run played to the platform from one played to another broker.
 */
export async function storedPassFrames(knex: Knex, deviceId: string, runId: string): Promise<number> {
  const row = await knex('messages').where('device_id', deviceId).where('frame_id', 'like', `${runId}-%`).count('* as n').first();
  return Number(row?.n ?? 0);
}
