import { CATALOG, FRAME_FIELDS } from '../../../lib/catalog.js';
import type { CsvChunk, ExportRow } from '../../../db/repositories/exports.repository.js';
import type { CsvCellSource } from '../../../db/export-csv.sql.js';

/**
 * How an export format writes its rows (docs/concepts/exports.md): a head, the text of some rows of a page, a tail.
 * Each call's text becomes one chunk of the reply, so what is held at a time is a page, whatever the export's size.
 */
export interface ExportWriter<R = ExportRow> {
  head(): string;
  rows(rows: R[]): string;
  tail(): string;
}

/** Each format's media type and file extension. */
export const FORMAT_SHAPES = {
  csv: { contentType: 'text/csv; charset=utf-8; header=present', extension: 'csv' },
  ndjson: { contentType: 'application/x-ndjson', extension: 'ndjson' },
  gpx: { contentType: 'application/gpx+xml; charset=utf-8', extension: 'gpx' },
  geojson: { contentType: 'application/geo+json', extension: 'geojson' },
} as const;

// ---- CSV (RFC 4180) ----

/**
 * A text cell a spreadsheet would read as a formula (it starts with = + - @, or a tab or carriage return, which some
 * spreadsheets skip before one) gets a leading apostrophe: it then shows as the text it is (OWASP's CSV injection
 * advice). Only text values are touched: numbers, timestamps and ids are written as they are.
 */
const FORMULA_START = /^[=+\-@\t\r]/;
export const protectText = (s: string): string => (FORMULA_START.test(s) ? `'${s}` : s);

/** RFC 4180: a field holding a comma, a double quote, CR or LF is quoted, its double quotes doubled. */
export const quoteField = (s: string): string => (/[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);

/** A value as its cell: numbers as JavaScript writes them, text protected, arrays of strings joined by "; ". */
export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return quoteField(protectText(v));
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return quoteField(protectText(v.join('; ')));
  return quoteField(protectText(JSON.stringify(v)));
}

/** A CSV column: its header, its value in a message, and where the SQL that writes its cell reads it. */
export interface CsvColumn { header: string; value(row: ExportRow): unknown; source: CsvCellSource }

/** "Speed (km/h)": the catalog's name with its unit, or the name alone for a unitless or text parameter. */
const label = (name: string, units: string | null) => (units ? `${name} (${units})` : name);

const ACCEL_AXES = Object.entries(FRAME_FIELDS).filter(([path]) => path.startsWith('accel.'))
  .map(([path, range]) => ({ axis: path.slice('accel.'.length), units: range.units }));

/**
 * The CSV's columns: timestamp, id (and the device, for a vehicle's export), latitude, longitude, then each catalog
 * parameter present in the range in the catalog's order, then the accelerometer's axes when any message has them.
 */
export function csvColumns(present: ReadonlySet<string>, withDevice: boolean): CsvColumn[] {
  const fixed: CsvColumn[] = [
    { header: 'timestamp', value: (r) => r.timestamp.toISOString(), source: 'timestamp' },
    { header: 'id', value: (r) => r.id, source: 'id' },
    ...(withDevice ? [{ header: 'device', value: (r: ExportRow) => r.deviceId, source: 'device' as const }] : []),
    { header: 'latitude', value: (r) => r.lat, source: 'latitude' },
    { header: 'longitude', value: (r) => r.lon, source: 'longitude' },
  ];
  const parameters = CATALOG.filter((p) => present.has(p.key))
    .map((p): CsvColumn => ({ header: label(p.name, p.units), value: (r) => r.data[p.key], source: { key: p.key } }));
  const accel = present.has('accel')
    ? ACCEL_AXES.map(({ axis, units }): CsvColumn => ({
      header: label(`Accel ${axis}`, units), value: (r) => (r.data.accel as Record<string, unknown> | undefined)?.[axis],
      source: { accel: axis },
    }))
    : [];
  return [...fixed, ...parameters, ...accel];
}

const CRLF = '\r\n';

const csvHead = (columns: CsvColumn[]) => columns.map((c) => quoteField(c.header)).join(',') + CRLF;
const csvLine = (columns: CsvColumn[], r: ExportRow) => columns.map((c) => csvCell(c.value(r))).join(',') + CRLF;

/** CSV of messages, each formatted here. */
export function csvWriter(columns: CsvColumn[]): ExportWriter {
  return { head: () => csvHead(columns), rows: (rows) => rows.map((r) => csvLine(columns, r)).join(''), tail: () => '' };
}

/** CSV of records PostgreSQL wrote (csvPage): their text as it is, a message it left to JavaScript formatted here. */
export function csvChunkWriter(columns: CsvColumn[]): ExportWriter<CsvChunk> {
  const record = (r: string | ExportRow) => (typeof r === 'string' ? r : csvLine(columns, r));
  return {
    head: () => csvHead(columns),
    rows: (chunks) => chunks.map((c) => c.text ?? c.records!.map(record).join('')).join(''),
    tail: () => '',
  };
}

// ---- NDJSON ----

/** One message per line, as GET …/messages shows it (`present`). */
export function ndjsonWriter(present: (r: ExportRow) => unknown): ExportWriter {
  return {
    head: () => '',
    rows: (rows) => rows.map((r) => `${JSON.stringify(present(r))}\n`).join(''),
    tail: () => '',
  };
}

// ---- GPX 1.1 ----

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
export const xmlEscape = (s: string): string => s.replace(/[&<>"']/g, (c) => XML_ESCAPES[c]);

/** GPX 1.1 has no speed element: the Garmin TrackPointExtension v2 carries it, in m/s. */
const GPXTPX = 'http://www.garmin.com/xmlschemas/TrackPointExtension/v2';

/** km/h → m/s, to the mm/s. */
const metersPerSecond = (kmh: number) => Math.round((kmh / 3.6) * 1000) / 1000;

function trkpt(r: ExportRow): string {
  const speed = r.data.vehicleSpeed;
  const ext = typeof speed === 'number'
    ? `<extensions><gpxtpx:TrackPointExtension><gpxtpx:speed>${metersPerSecond(speed)}</gpxtpx:speed></gpxtpx:TrackPointExtension></extensions>`
    : '';
  return `<trkpt lat="${r.lat}" lon="${r.lon}"><time>${r.timestamp.toISOString()}</time>${ext}</trkpt>\n`;
}

/** A GPX 1.1 document with one track of one segment: a point per message with a location (`name`: the track's). */
export function gpxWriter(name: string, now = new Date()): ExportWriter {
  return {
    head: () => '<?xml version="1.0" encoding="UTF-8"?>\n'
      + `<gpx version="1.1" creator="drivewire" xmlns="http://www.topografix.com/GPX/1/1" xmlns:gpxtpx="${GPXTPX}">\n`
      + `<metadata><name>${xmlEscape(name)}</name><time>${now.toISOString()}</time></metadata>\n`
      + `<trk><name>${xmlEscape(name)}</name><trkseg>\n`,
    rows: (rows) => rows.filter((r) => r.lat !== null && r.lon !== null).map(trkpt).join(''),
    tail: () => '</trkseg></trk>\n</gpx>\n',
  };
}

// ---- GeoJSON (RFC 7946) ----

/**
 * A Feature whose geometry is the LineString of the messages' locations, `properties` first. A LineString needs two
 * positions: with fewer (`points` < 2, known before the head is written) the geometry is null.
 */
export function geojsonWriter(id: string, properties: Record<string, unknown>, points: number): ExportWriter {
  let first = true;
  const line = points >= 2;
  return {
    head: () => `{"type":"Feature","id":${JSON.stringify(id)},"properties":${JSON.stringify(properties)},`
      + (line ? '"geometry":{"type":"LineString","coordinates":[' : '"geometry":null'),
    rows: (rows) => {
      if (!line) return '';
      const text = rows.filter((r) => r.lat !== null && r.lon !== null).map((r) => `[${r.lon},${r.lat}]`).join(',');
      const out = text && !first ? `,${text}` : text;
      if (text) first = false;
      return out;
    },
    tail: () => (line ? ']}}\n' : '}\n'),
  };
}
