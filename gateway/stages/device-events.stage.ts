import type { NewEvent } from '../../db/repositories/events.repository.js';
import type { StageFactory, EventStage } from '../ingest.types.js';

const DEVICE_EVENT_KINDS = new Set(['startup', 'shutdown', 'phone-home']);

/** startup, shutdown and phone-home frames become events of those types (object = the vehicle, meta null). */
export const deviceEventsStage: StageFactory<EventStage> = () => ({
  name: 'device-events',
  async apply({ devices }) {
    const events: NewEvent[] = [];
    for (const device of devices) {
      for (const m of device.messages) {
        if (!DEVICE_EVENT_KINDS.has(m.kind)) continue;
        events.push({
          deviceId: device.deviceId, vehicleId: m.vehicleId, timestamp: m.timestamp, eventType: m.kind,
          objectType: 'vehicle', objectId: m.vehicleId, meta: null,
        });
      }
    }
    return events;
  },
});
