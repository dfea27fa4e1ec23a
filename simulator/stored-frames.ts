import type { Knex } from 'knex';

/**
 * Frames of one simulator pass the platform stored: the device's messages stamped within the pass, which no other pass
 * of the dummy shares (each pass takes its stamps after the last one's: simulator/clock.ts). A broker acknowledges a QoS 1
 * frame, but only drivewire's gateway acknowledges after storing it, so this count tells a run played to the platform
 * from one played to another broker.
 */
export async function storedPassFrames(knex: Knex, deviceId: string, from: Date, to: Date): Promise<number> {
  const row = await knex('messages').where('device_id', deviceId).where('ts', '>=', from).where('ts', '<=', to).count('* as n').first();
  return Number(row?.n ?? 0);
}
