import { describe, expect, it } from 'vitest';
import { decodeRoute, loadStoredRoutes } from '../../simulator/route.js';
import { parseRouteFile, routeFromCoordinates, RouteImportError } from '../../simulator/route-import.js';
import { legsToCoords } from './synthetic-route.js';

const LINE: [number, number][] = [[-96.7835, 32.8345], [-96.785, 32.8346], [-96.7875, 32.8345]];

const gpx = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>
<gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1">
${body}
</gpx>
`;
const trkpts = LINE.map(([lon, lat]) => `      <trkpt lat="${lat}" lon="${lon}"><ele>150</ele></trkpt>`).join('\n');

function importError(text: string, fileName = 'route.txt'): RouteImportError {
  try {
    parseRouteFile(text, fileName);
  } catch (err) {
    expect(err).toBeInstanceOf(RouteImportError);
    return err as RouteImportError;
  }
  throw new Error('expected a RouteImportError');
}

describe('parseRouteFile accepts', () => {
  it('a GeoJSON LineString (elevations dropped)', () => {
    const parsed = parseRouteFile(JSON.stringify({ type: 'LineString', coordinates: LINE.map((c) => [...c, 150]) }), 'a.geojson');
    expect(parsed.coordinates).toEqual(LINE);
  });

  it('a Feature with a LineString, taking name and description from its properties', () => {
    const feature = { type: 'Feature', properties: { name: 'Home', description: 'to the shop' }, geometry: { type: 'LineString', coordinates: LINE } };
    expect(parseRouteFile(JSON.stringify(feature), 'a.json')).toEqual({ name: 'Home', description: 'to the shop', coordinates: LINE });
  });

  it('a FeatureCollection with one LineString among points', () => {
    const fc = {
      type: 'FeatureCollection',
      features: [
        { type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: LINE[0] } },
        { type: 'Feature', properties: { name: 'Loop' }, geometry: { type: 'LineString', coordinates: LINE } },
      ],
    };
    expect(parseRouteFile(JSON.stringify(fc), 'a.geojson')).toMatchObject({ name: 'Loop', coordinates: LINE });
  });

  it('a GPX track (trk/trkseg/trkpt) with its name', () => {
    const text = gpx(`  <trk>\n    <name>Morning drive</name>\n    <trkseg>\n${trkpts}\n    </trkseg>\n  </trk>`);
    expect(parseRouteFile(text, 'a.gpx')).toEqual({ name: 'Morning drive', description: undefined, coordinates: LINE });
  });

  it('a GPX route (rte/rtept)', () => {
    const rtepts = LINE.map(([lon, lat]) => `    <rtept lon="${lon}" lat="${lat}"/>`).join('\n');
    const text = gpx(`  <rte>\n    <name>Planned</name>\n    <desc>via Main St</desc>\n${rtepts}\n  </rte>`);
    expect(parseRouteFile(text, 'a.gpx')).toEqual({ name: 'Planned', description: 'via Main St', coordinates: LINE });
  });

  it('an encoded polyline (precision 5) with surrounding whitespace', async () => {
    const route = (await loadStoredRoutes())[0];
    const parsed = parseRouteFile(`\n  ${route.polyline}  \n`, 'a.txt');
    expect(parsed.coordinates).toEqual(decodeRoute(route).coordinates);
  });
});

describe('parseRouteFile refuses, saying where and why', () => {
  it('bad JSON, with the line', () => {
    const err = importError('{\n  "type": "LineString",\n  "coordinates": [[1, 2],, ]\n}', 'bad.geojson');
    expect(err.message).toMatch(/^bad\.geojson: line 3: not valid JSON \(/);
  });

  it('a Polygon where a LineString was expected', () => {
    const fc = { type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[LINE[0], LINE[1], LINE[2], LINE[0]]] } }] };
    expect(importError(JSON.stringify(fc)).detail).toBe('features[0].geometry.type is Polygon, expected LineString');
  });

  it('a latitude out of range', () => {
    const coordinates = [...LINE, [-96.79, 123]];
    expect(importError(JSON.stringify({ type: 'LineString', coordinates })).detail).toBe('coordinates[3][1] latitude 123 is out of range -90..90');
  });

  it('a coordinate that is not a number', () => {
    const coordinates = [LINE[0], ['-96.78', 32.8]];
    expect(importError(JSON.stringify({ type: 'LineString', coordinates })).detail).toBe('coordinates[1][0] longitude "-96.78" is not a number');
  });

  it('a route of one point', () => {
    expect(importError(JSON.stringify({ type: 'LineString', coordinates: [LINE[0]] })).detail).toBe('a route needs at least 2 points, got 1');
  });

  it('two LineStrings in one collection', () => {
    const f = { type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates: LINE } };
    expect(importError(JSON.stringify({ type: 'FeatureCollection', features: [f, f] })).detail)
      .toBe('features holds 2 LineStrings (features[0], features[1]), expected exactly one');
  });

  it('a GPX trkpt whose lat is not a number, by file line', () => {
    const text = gpx(`  <trk>\n    <trkseg>\n${trkpts}\n      <trkpt lat="abc" lon="-96.79"/>\n    </trkseg>\n  </trk>`);
    // Lines: 1 declaration, 2 <gpx>, 3 <trk>, 4 <trkseg>, 5–7 points, 8 the bad one.
    expect(importError(text, 'bad.gpx').message).toBe('bad.gpx: line 8: trkpt lat="abc" is not a number');
  });

  it('a GPX trkpt out of range and one without lon', () => {
    const far = gpx(`<trk><trkseg>\n<trkpt lat="32.8" lon="-96.7"/>\n<trkpt lat="95" lon="-96.7"/>\n</trkseg></trk>`);
    expect(importError(far).detail).toBe('line 5: trkpt lat="95" is out of range -90..90');
    const missing = gpx(`<trk><trkseg>\n<trkpt lat="32.8"/>\n</trkseg></trk>`);
    expect(importError(missing).detail).toBe('line 4: trkpt has no lon attribute');
  });

  it('malformed XML, with the line', () => {
    expect(importError('<gpx>\n<trk>\n</gpx>').detail).toMatch(/^line 3: not valid XML \(/);
  });

  it('XML that is not GPX', () => {
    expect(importError('<kml><Document/></kml>').detail).toBe('root element is <kml>, expected <gpx>');
  });

  it('garbage', () => {
    expect(importError('hello world, this is not a route').detail).toBe('not GeoJSON, GPX or an encoded polyline');
    expect(importError('garbage').detail).toBe('not GeoJSON, GPX or an encoded polyline');
  });

  it('an empty file', () => {
    expect(importError('  \n').detail).toBe('the file is empty');
  });
});

describe('routeFromCoordinates', () => {
  const coords = legsToCoords([[800, 0], [0, 400]]);

  it('builds the stored record: polyline, GPS distance, estimated duration, one message a second', () => {
    const route = routeFromCoordinates(coords, { name: ' My route ', description: 'test' });
    expect(route.name).toBe('My route');
    expect(route.distanceByGPS).toBeGreaterThan(1195);
    expect(route.distanceByGPS).toBeLessThan(1205);
    expect(route.distanceByVSS).toBe(route.distanceByGPS);
    expect(decodeRoute(route).coordinates.length).toBe(coords.length);
    // 1.2 km at a 40 km/h urban cruise with a slow corner: ~2 minutes
    expect(route.duration).toBeGreaterThan(110_000);
    expect(route.duration).toBeLessThan(140_000);
    expect(route.messageCount).toBe(Math.round(route.duration / 1000));
    expect(route.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps a given duration and drops points repeated at precision 5', () => {
    const standing = [coords[0], coords[0], coords[0], ...coords.slice(1)];
    const route = routeFromCoordinates(standing, { name: 'x', duration: 300_000 });
    expect(route.duration).toBe(300_000);
    expect(route.messageCount).toBe(300);
    expect(decodeRoute(route).coordinates.length).toBe(coords.length);
  });

  it('refuses points that collapse to one at precision 5', () => {
    expect(() => routeFromCoordinates([[-96.8, 32.8], [-96.800001, 32.800001]], { name: 'x' })).toThrow(/at least 2 points, got 1/);
  });
});

describe('RouteImportError', () => {
  it('is a ValidationError (HTTP 400) named RouteImportError', async () => {
    const { ValidationError } = await import('../../lib/errors.js');
    const err = importError('garbage', 'x.txt');
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ name: 'RouteImportError', statusCode: 400, fileName: 'x.txt', message: 'x.txt: not GeoJSON, GPX or an encoded polyline' });
  });
});
