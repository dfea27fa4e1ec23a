import type * as L from 'leaflet';
import type { Message } from './records.js';

export interface DeviceState {
  id: string;
  name: string;
  marker: L.Marker | null;
  /** [lat, lon] of the last location seen, and when. */
  position: [number, number] | null;
  lastSeen: string | null;
}

/** What the panels share: the map, the application's devices, the selected device and live messages. */
export interface Ctx {
  map: L.Map;
  devices: Map<string, DeviceState>;
  selected(): string | null;
  select(id: string, opts?: { pan?: boolean }): void;
  refreshDevices(): Promise<void>;
  /** Show these bounds: a view a panel or the user chose, which the first automatic fit on the devices no longer overrides. */
  fit(bounds: L.LatLngBounds): void;
  onSelect(fn: (deviceId: string | null) => void): void;
  onLive(fn: (deviceId: string, message: Message) => void): void;
  /** The tab shown; panels poll only while visible. */
  visible(panel: 'devices' | 'runs' | 'trips' | 'rules'): boolean;
  onShow(fn: (panel: string) => void): void;
}
