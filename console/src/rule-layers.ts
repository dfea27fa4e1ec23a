import { L } from './map.js';
import { corridorOutline } from './corridor.js';
import type { Boundary } from './records.js';

export const RULE_COLOR = '#7a3db8';
type LatLon = [number, number];

/** Meters per screen pixel at a point, at the map's current zoom. */
function metersPerPixel(map: L.Map, at: L.LatLng): number {
  const p = map.latLngToLayerPoint(at);
  return map.distance(at, map.layerPointToLatLng(p.add([100, 0]))) / 100 || 1;
}

/**
 * The inside of a corridor, translucent: the line stroked with round caps and joins, `meters` either side of it.
 * A stroke is the line's exact buffer on screen, so its weight is set from the meters at each zoom (while a zoom
 * animates, Leaflet scales the drawn path, the band with it). Not clipped to the view: a clipped end would show a
 * round cap where the line leaves the screen.
 */
export function corridorBand(map: L.Map, line: LatLon[], meters: number, className: string): L.Polyline {
  const band = L.polyline(line, {
    color: RULE_COLOR, opacity: .16, weight: 1, lineCap: 'round', lineJoin: 'round', noClip: true, interactive: false, className,
  });
  const centre = L.latLngBounds(line).getCenter();
  const fit = () => { band.setStyle({ weight: Math.max(1, (2 * meters) / metersPerPixel(map, centre)) }); };
  band.on('add', () => { fit(); map.on('zoomend', fit); });
  band.on('remove', () => { map.off('zoomend', fit); });
  return band;
}

/**
 * Outlines already computed, by boundary and distance: the rule list reloads whenever an event arrives, and a long
 * corridor's outline takes a moment. A boundary is read whole each time, so its id, size and ends name its line.
 */
const outlines = new Map<string, [number, number][][]>();
function outline(id: string, line: number[][], meters: number): [number, number][][] {
  const key = `${id}|${meters}|${line.length}|${line[0]}|${line[line.length - 1]}`;
  let pieces = outlines.get(key);
  if (!pieces) {
    if (outlines.size >= 100) outlines.clear();
    outlines.set(key, pieces = corridorOutline(line, meters));
  }
  return pieces;
}

/** The edge at `meters` from the line, as polylines (see corridor.ts). */
function corridorEdge(id: string, coordinates: number[][], meters: number, options: L.PolylineOptions): L.Polyline | null {
  const pieces = outline(id, coordinates, meters);
  return pieces.length ? L.polyline(pieces, { color: RULE_COLOR, weight: 2, fill: false, ...options }) : null;
}

/** Even–odd ray cast over all rings: inside the polygon and outside its holes. */
function inPolygon([lat, lon]: LatLon, rings: number[][][]): boolean {
  let inside = false;
  for (const ring of rings) for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [[xi, yi], [xj, yj]] = [ring[i], ring[j]];
    if ((yi > lat) !== (yj > lat) && lon < ((xj - xi) * (lat - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

const fence = { color: RULE_COLOR, weight: 2, fillOpacity: .08, className: 'dw-rule' };
const bufferEdge = { color: RULE_COLOR, weight: 2, opacity: .9, dashArray: '6 6', fill: false, interactive: false, className: 'dw-rule-buffer' };

/**
 * A rule's geographic boundary on the map: the fence (a circle, a polygon, or a corridor's line, band and edge),
 * and, with bufferMeters, the dashed edge a device must pass to leave. Null for a parametric boundary.
 */
export function boundaryLayer(map: L.Map, b: Boundary): L.FeatureGroup | null {
  const group = L.featureGroup();
  if (b.type === 'radius') {
    L.circle([b.lat, b.lon], { ...fence, radius: b.radius }).addTo(group);
    if (b.bufferMeters) L.circle([b.lat, b.lon], { ...bufferEdge, radius: b.radius + b.bufferMeters }).addTo(group);
  } else if (b.type === 'polygon') {
    L.polygon(b.coordinates.map((ring) => ring.map(([x, y]) => [y, x] as LatLon)), fence).addTo(group);
    // The outline of each ring at the buffer's distance, less the part inside the polygon (the offset inwards).
    if (b.bufferMeters) for (const [i, ring] of b.coordinates.entries()) for (const piece of outline(`${b.id}/${i}`, ring, b.bufferMeters)) {
      if (!inPolygon(piece[Math.floor(piece.length / 2)], b.coordinates)) L.polyline(piece, bufferEdge).addTo(group);
    }
  } else if (b.type === 'corridor') {
    const line = b.coordinates.map(([x, y]) => [y, x] as LatLon);
    corridorBand(map, line, b.widthMeters, 'dw-corridor').addTo(group);
    L.polyline(line, { color: RULE_COLOR, weight: 3, className: 'dw-rule dw-corridor-line' }).addTo(group);
    corridorEdge(b.id, b.coordinates, b.widthMeters, { className: 'dw-rule dw-corridor-edge', opacity: .8 })?.addTo(group);
    if (b.bufferMeters) corridorEdge(b.id, b.coordinates, b.widthMeters + b.bufferMeters, bufferEdge)?.addTo(group);
  } else return null;
  return group;
}

/** A tooltip's content as text: Leaflet sets a string tooltip as markup, an element as it is. */
export function textContent(text: string): () => HTMLElement {
  return () => {
    const span = document.createElement('span');
    span.textContent = text;
    return span;
  };
}
