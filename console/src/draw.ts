import { L } from './map.js';
import { corridorBand } from './rule-layers.js';

export type Shape =
  | { type: 'radius'; lat: number; lon: number; radius: number }
  | { type: 'polygon'; coordinates: [number, number][] }
  /** [lon, lat] positions of the line. */
  | { type: 'corridor'; coordinates: [number, number][] };
export type Kind = Shape['type'];

/**
 * A hand-written drawing tool on plain Leaflet. Radius: click the centre, move, click again to fix the radius
 * (meters on the ground, Leaflet's map.distance). Polygon: click the vertices, then click the first one again
 * or call finish(). Corridor: click the points of the line, then finish(); its band shows `width` meters either side.
 * Escape cancels. The shape so far is shown in `layer`.
 */
export class DrawTool {
  private centre: L.LatLng | null = null;
  private vertices: L.LatLng[] = [];
  private active: Kind | null = null;
  shape: Shape | null = null;
  /** A corridor's half-width (m) for its preview band; 0 draws the line alone. */
  width = 0;

  constructor(private readonly map: L.Map, private readonly layer: L.LayerGroup, private readonly onChange: (s: Shape | null, done: boolean) => void) {
    map.on('click', (e: L.LeafletMouseEvent) => this.click(e.latlng));
    map.on('mousemove', (e: L.LeafletMouseEvent) => this.move(e.latlng));
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && this.active) this.cancel(); });
  }

  get drawing(): boolean { return this.active !== null; }

  start(kind: Kind): void {
    this.cancel();
    this.active = kind;
    this.map.doubleClickZoom.disable();
    this.map.getContainer().style.cursor = 'crosshair';
  }

  cancel(): void {
    this.stop();
    this.shape = null;
    this.layer.clearLayers();
    this.onChange(null, false);
  }

  /** Closes the polygon drawn so far (at least 3 vertices), or ends the corridor's line (at least 2 points). */
  finish(): boolean {
    if (this.active === 'radius' || this.vertices.length < (this.active === 'polygon' ? 3 : 2)) return false;
    this.render(null);
    this.stop();
    this.onChange(this.shape, true);
    return true;
  }

  /** A shape typed in the form (the keyboard way): drawn as if it had been clicked. */
  set(shape: Shape): void {
    this.stop();
    this.shape = shape;
    this.layer.clearLayers();
    if (shape.type === 'radius') L.circle([shape.lat, shape.lon], { radius: shape.radius, color: '#7a3db8', className: 'dw-draw' }).addTo(this.layer);
    else if (shape.type === 'polygon') L.polygon(shape.coordinates.map(([lon, lat]) => [lat, lon] as [number, number]), { color: '#7a3db8', className: 'dw-draw' }).addTo(this.layer);
    else this.drawLine(shape.coordinates.map(([lon, lat]) => L.latLng(lat, lon)));
  }

  /** The corridor's band redrawn at a new width, the line kept. */
  setWidth(meters: number): void {
    this.width = meters > 0 ? meters : 0;
    if (this.active === 'corridor') this.render(null);
    else if (this.shape?.type === 'corridor') this.set(this.shape);
  }

  private drawLine(pts: L.LatLng[]): void {
    if (this.width && pts.length >= 2) corridorBand(this.map, pts.map((p) => [p.lat, p.lng]), this.width, 'dw-draw-band').addTo(this.layer);
    L.polyline(pts, { color: '#7a3db8', weight: 3, className: 'dw-draw' }).addTo(this.layer);
  }

  private stop(): void {
    this.active = null;
    this.centre = null;
    this.vertices = [];
    this.map.doubleClickZoom.enable();
    this.map.getContainer().style.cursor = '';
  }

  private click(p: L.LatLng): void {
    if (this.active === 'radius') {
      if (!this.centre) {
        this.centre = p;
        this.move(p);
        return;
      }
      this.move(p);
      this.stop();
      this.onChange(this.shape, true);
    } else if (this.active) {
      const first = this.vertices[0];
      if (this.active === 'polygon' && first && this.vertices.length >= 3 && this.map.latLngToContainerPoint(first).distanceTo(this.map.latLngToContainerPoint(p)) < 12) {
        this.finish();
        return;
      }
      this.vertices.push(p);
      this.render(null);
      this.onChange(this.shape, false);
    }
  }

  private move(p: L.LatLng): void {
    if (this.active === 'radius' && this.centre) {
      const radius = Math.max(1, Math.round(this.map.distance(this.centre, p)));
      this.shape = { type: 'radius', lat: round(this.centre.lat), lon: round(this.centre.lng), radius };
      this.layer.clearLayers();
      L.circle(this.centre, { radius, color: '#7a3db8', className: 'dw-draw' }).addTo(this.layer);
      L.circleMarker(this.centre, { radius: 4, color: '#7a3db8' }).addTo(this.layer);
      this.onChange(this.shape, false);
    } else if (this.active && this.vertices.length) this.render(p);
  }

  private render(cursor: L.LatLng | null): void {
    this.layer.clearLayers();
    const pts = cursor ? [...this.vertices, cursor] : this.vertices;
    if (this.active === 'corridor') this.drawLine(pts);
    else if (pts.length >= 3) L.polygon(pts, { color: '#7a3db8', className: 'dw-draw' }).addTo(this.layer);
    else L.polyline(pts, { color: '#7a3db8', className: 'dw-draw' }).addTo(this.layer);
    for (const v of this.vertices) L.circleMarker(v, { radius: 4, color: '#7a3db8' }).addTo(this.layer);
    if (this.active === 'corridor') {
      const line = this.vertices.map((v) => [round(v.lng), round(v.lat)] as [number, number]);
      this.shape = line.length >= 2 ? { type: 'corridor', coordinates: line } : null;
    } else if (this.vertices.length >= 3) {
      const ring = this.vertices.map((v) => [round(v.lng), round(v.lat)] as [number, number]);
      this.shape = { type: 'polygon', coordinates: [...ring, ring[0]] };
    } else this.shape = null;
  }
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;
