import * as L from 'leaflet';
import 'leaflet/dist/leaflet.css';
import iconUrl from 'leaflet/dist/images/marker-icon.png';
import iconRetinaUrl from 'leaflet/dist/images/marker-icon-2x.png';
import shadowUrl from 'leaflet/dist/images/marker-shadow.png';

export interface Settings { tileUrl: string; tileAttribution: string }

export function settings(): Settings {
  const el = document.getElementById('drivewire-settings');
  const fallback = { tileUrl: 'https://tile.openstreetmap.org/{z}/{x}/{y}.png', tileAttribution: '&copy; OpenStreetMap contributors' };
  try {
    return { ...fallback, ...(el ? JSON.parse(el.textContent ?? '{}') : {}) };
  } catch {
    return fallback;
  }
}

/** The bundled marker images (no CDN): Leaflet would otherwise guess their path from its CSS. */
L.Icon.Default.mergeOptions({ iconUrl, iconRetinaUrl, shadowUrl });
delete (L.Icon.Default.prototype as unknown as { _getIconUrl?: unknown })._getIconUrl;

/**
 * The map: tiles from the configured URL over a plain background, so with no tile server reachable the vector
 * layers (devices, trips, rules) still draw. Starts over Dallas–Fort Worth, where the stored routes are.
 */
export function createMap(el: HTMLElement, s: Settings): L.Map {
  const map = L.map(el, { zoomControl: true, keyboard: true, preferCanvas: false }).setView([32.78, -96.8], 12);
  L.tileLayer(s.tileUrl, { attribution: s.tileAttribution, maxZoom: 19, crossOrigin: false }).addTo(map);
  L.control.scale({ imperial: false }).addTo(map);
  return map;
}

export function deviceIcon(name: string, selected: boolean): L.DivIcon {
  const span = document.createElement('span');
  span.textContent = name;
  return L.divIcon({
    className: `dw-device${selected ? ' selected' : ''}`, iconSize: [18, 18], iconAnchor: [9, 9],
    html: `<div class="dot"></div><div class="name">${span.innerHTML}</div>`,
  });
}

export function pinIcon(kind: 'start' | 'stop'): L.DivIcon {
  return L.divIcon({ className: '', iconSize: [24, 24], iconAnchor: [12, 12], html: `<div class="dw-pin ${kind}">${kind === 'start' ? 'S' : 'E'}</div>` });
}

/** Google encoded polyline (precision 5) → [lat, lon] pairs, as trip and route previews come. */
export function decodePolyline(s: string): [number, number][] {
  const out: [number, number][] = [];
  let i = 0, lat = 0, lon = 0;
  const next = () => {
    let shift = 0, result = 0, b: number;
    do {
      b = s.charCodeAt(i++) - 63;
      result |= (b & 0x1f) << shift;
      shift += 5;
    } while (b >= 0x20);
    return result & 1 ? ~(result >> 1) : result >> 1;
  };
  while (i < s.length) {
    lat += next();
    lon += next();
    out.push([lat / 1e5, lon / 1e5]);
  }
  return out;
}

export { L };
