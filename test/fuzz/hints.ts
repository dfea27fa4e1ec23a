import fc from 'fast-check';
import type { JsonSchema } from './operations.js';
import { NUMBER_EDGES, uuidArb, junkString, type GenOptions } from './values.js';

/**
 * Meaningful values for fields whose schema is only `string` or `number` (the rules live in the
 * descriptions): without them almost every request would stop at the first 400 and never reach the
 * services and the database. Keyed by property / query parameter name.
 */
const EVENT_TYPES = ['startup', 'shutdown', 'phone-home', 'trip-started', 'trip-stopped', 'trip-completed', 'trip-orphaned',
  'dtc-on', 'dtc-off', 'collision', 'rule-enter', 'rule-leave', 'rule-*', 'distance-trigger'];
const SQUARE = [[[-96.8, 32.77], [-96.8, 32.78], [-96.79, 32.78], [-96.79, 32.77], [-96.8, 32.77]]];
const BOWTIE = [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]];
const LINE = { type: 'LineString', coordinates: [[-96.8, 32.77], [-96.79, 32.775], [-96.78, 32.78]] };
const GPX = '<?xml version="1.0"?><gpx version="1.1"><trk><name>t</name><trkseg><trkpt lat="32.77" lon="-96.8"/>'
  + '<trkpt lat="32.78" lon="-96.79"/></trkseg></trk></gpx>';
const LAUGHS = '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
  + '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><gpx><trk><name>&lol3;</name><trkseg>'
  + '<trkpt lat="1" lon="1"/><trkpt lat="2" lon="2"/></trkseg></trk></gpx>';
const POLYLINE = '_p~iF~ps|U_ulLnnqC_mqNvxq`@';

/** Mostly `valid`, sometimes an edge: enough requests must pass validation to reach the services. */
const mostly = <T>(valid: fc.Arbitrary<T>, edge: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: valid }, { weight: 1, arbitrary: edge });

/**
 * The edges of the instants the platform takes (lib/time.ts: 1970-01-01..9999-12-31) and of JavaScript's (±8.64e15 ms,
 * which PostgreSQL cannot store: a 400, never a 500), and dates off the calendar that Date.parse rolls over (February 30th).
 */
export const TIME_EDGES = ['-8640000000000000', '8640000000000000', '-8639999999999999', '8639999999999999', '-62198755200000',
  '253402300799999', '253402300800000', '1970-01-01T00:00:00Z', '1969-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z',
  '0001-01-01T00:00:00Z', '0000-01-01', '9999-12-31', '2026-02-30', '2025-02-29', '2024-02-29', '2026-04-31', '2026-02-30T10:00:00Z',
  '2026-01-01T24:00:00Z', '2026-01-01T23:59:60Z', '2026-01-01T00:00:00+24:00', '-275760-09-13T00:00:00.000Z', '-1', 'NaN',
  'Infinity', '-Infinity', '1e308', '-0'];

const time = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('2026-01-01T09:59:59Z', '2026-01-01T10:00:02.500Z', '2026-01-01', '1767261600000') },
  { weight: 2, arbitrary: fc.constantFrom(...TIME_EDGES) },
  fc.date({ min: new Date('1960-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  fc.integer({ min: -1e13, max: 1e13 }).map(String),
  fc.constantFrom('0', '-1', '1e400', '99999999999999999999', '2026-13-45', '2026-02-30T25:61:00Z', 'tomorrow', '1.5', '0x10',
    '+275760-09-13T00:00:00.001Z', '8640000000000001'),
);
const size = fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 150 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom('-1', '1e3', '1.5', 'abc', '99999999999999999999', '9007199254740993', '-0', '0x10', ' 5', '') });

const HINTS: Record<string, (o: GenOptions) => fc.Arbitrary<unknown>> = {
  eventType: () => mostly(fc.constant('startup'), fc.constantFrom(...EVENT_TYPES)), // the world's subscription is a startup one
  type: () => fc.constantFrom(...EVENT_TYPES, 'parametric', 'radius', 'polygon', 'specific', 'from_now', 'milestone', 'rule', 'vehicle', 'trip', 'odometer-trigger', '-*', '*', '%', '_'),
  objectType: () => fc.constantFrom('rule', 'vehicle', 'trip', 'odometer-trigger', 'device', ''),
  state: () => fc.constantFrom('active', 'inactive', 'all', 'ACTIVE', ''),
  parameter: () => mostly(fc.constantFrom('vehicleSpeed', 'rpm', 'batteryVoltage'), fc.constantFrom('location', 'accel', 'nope', 'constructor', '__proto__')),
  url: () => fc.oneof(fc.webUrl(), fc.constantFrom('http://127.0.0.1:9/h', 'https://example.com/hook', 'http://[::1]/',
    'http://[::ffff:7f00:1]/', 'ftp://x/', 'http://', 'javascript:alert(1)', 'http://169.254.169.254/latest', `http://x/${'a'.repeat(5000)}`)),
  lon: () => mostly(fc.double({ min: -180, max: 180, noNaN: true }), fc.constantFrom(-181, 180.0001, 1e308)),
  lat: () => mostly(fc.double({ min: -90, max: 90, noNaN: true }), fc.constantFrom(-91, 90.5, -1e308)),
  radius: () => mostly(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.constantFrom(0, -1, 5e-324, 20_037_509, 20_037_510, ...NUMBER_EDGES)),
  min: () => mostly(fc.integer({ min: -100, max: 50 }), fc.constantFrom(null, ...NUMBER_EDGES)),
  max: () => mostly(fc.integer({ min: 50, max: 200 }), fc.constantFrom(null, ...NUMBER_EDGES)),
  coordinates: () => mostly(fc.constant(SQUARE), fc.constantFrom(BOWTIE, [SQUARE[0].slice(0, 4)], [], [[]], [[[0, 0]]], [...SQUARE, ...SQUARE], [[[1e308, 1e308], [0, 0], [1, 1], [1e308, 1e308]]])),
  vin: () => mostly(fc.stringMatching(/^VV[A-HJ-NPR-Z0-9]{15}$/), fc.constantFrom('VV1AB2CD3EF456789', '1HGCM82633A004352', 'VV1AB2CD3EF45678I', 'vv1ab2cd3ef456789', '')),
  speed: () => mostly(fc.double({ min: 1, max: 1000, noNaN: true }), fc.constantFrom(0, 1001, -1, ...NUMBER_EDGES)),
  scenarios: () => fc.subarray(['hard-brake', 'hard-accel', 'dtc', 'weak-battery', 'collision', 'gps-gap', 'duplicates', 'nope']),
  polyline: () => mostly(fc.constant(POLYLINE), fc.constantFrom('??', '@@@', '_', '~'.repeat(1000), '')),
  gpx: () => fc.constantFrom(GPX, LAUGHS, '<gpx/>', '<gpx><trk><trkseg><trkpt lat="x" lon="1e400"/></trkseg></trk></gpx>', '<', `<a>${'<b>'.repeat(2000)}`),
  geojson: () => fc.constantFrom(LINE, { type: 'Feature', properties: { name: 'f' }, geometry: LINE },
    { type: 'FeatureCollection', features: [{ type: 'Feature', geometry: LINE }] }, { type: 'Point', coordinates: [0, 0] },
    { type: 'LineString', coordinates: [[0, 0]] }, { type: 'LineString', coordinates: [['a', null], [1e308, -1e308]] },
    { type: 'GeometryCollection', geometries: [LINE] }, { type: 'Feature', geometry: null }),
  // Shapes the schema cannot say: a route from exactly one source, boundaries whose fields match their type.
  route: (o) => fc.constantFrom('file', 'geojson', 'gpx', 'polyline').chain((source) => fc.record({
    [source]: HINTS[source](o), name: HINTS.name(o), description: fc.string({ maxLength: 50 }),
    duration: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 3_600_000 }) }, { weight: 1, arbitrary: fc.constantFrom(0, -1, 1e308, 5e-324) }),
    fileName: fc.string({ maxLength: 20 }),
  }, { requiredKeys: [source] })),
  boundaries: (o) => fc.array(fc.oneof(
    fc.record({ type: fc.constant('parametric'), parameter: HINTS.parameter(o), min: HINTS.min(o), max: HINTS.max(o) }, { requiredKeys: ['type', 'parameter'] }),
    fc.record({ type: fc.constant('radius'), lon: HINTS.lon(o), lat: HINTS.lat(o), radius: HINTS.radius(o) }),
    fc.record({ type: fc.constant('polygon'), coordinates: HINTS.coordinates(o) }),
  ), { minLength: 1, maxLength: 3 }),
  file: () => fc.constantFrom(JSON.stringify(LINE), GPX, POLYLINE, LAUGHS, '{', '', 'garbage'),
  appData: (o) => fc.oneof(junkString(o), fc.constantFrom('x'.repeat(16 * 1024), 'x'.repeat(16 * 1024 + 1), 'é'.repeat(8 * 1024 + 1))),
  unit: () => mostly(fc.constantFrom('km', 'mi', 'm'), fc.constantFrom('KM', 'miles', '', 'ft')),
  reading: () => mostly(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.constantFrom(-1, 5e-324, -0, 1e8, 100_000_001, ...NUMBER_EDGES)),
  threshold: () => mostly(fc.double({ min: 0.1, max: 1e6, noNaN: true }), fc.constantFrom(0, -1, 5e-324, 1e8, 100_000_001, ...NUMBER_EDGES)),
  date: () => time,
  odometerTrigger: (o) => fc.record({
    type: mostly(fc.constantFrom('specific', 'from_now', 'milestone'), fc.constantFrom('', 'MILESTONE', 'startup')),
    threshold: HINTS.threshold(o), unit: HINTS.unit(o),
  }),
  // query parameters
  limit: () => size,
  offset: () => size,
  since: () => time,
  until: () => time,
  fields: () => fc.constantFrom('vehicleSpeed,rpm', 'location', 'vehicleSpeed', ',,', 'nope', 'location,location', '*', 'data'),
  objectId: (o) => uuidArb(o, 'rule'),
  deviceId: (o) => uuidArb(o, 'device'),
  ttlSeconds: () => mostly(fc.integer({ min: 60, max: 1e9 }), fc.constantFrom(59, 0, -1, 2 ** 31, 1e308)),
  name: (o) => fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), junkString(o)),
};

export function hintFor(name: string, schema: JsonSchema, o: GenOptions): fc.Arbitrary<unknown> | null {
  if (schema.format === 'uuid' || schema.enum || !Object.hasOwn(HINTS, name)) return null;
  return HINTS[name](o);
}
