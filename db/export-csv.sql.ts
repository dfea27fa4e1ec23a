/**
 * A CSV export's record written by PostgreSQL (docs/concepts/exports.md): the text of each cell as the export's
 * JavaScript writer (api/modules/exports/exports.formats.ts, csvCell) writes it, so that the API only joins strings
 * instead of parsing each message's data into objects and formatting them (docs/development/performance.md, export).
 *
 * A cell whose text SQL cannot be sure to write as JavaScript does is NULL, and so is then the whole record: the
 * export writes that message in JavaScript. These are a number that JavaScript writes in exponent form or PostgreSQL
 * does (below 1e-4 or from 1e15), NaN and infinities, a text value that is a number, an object or a list holding
 * anything but strings, and a timestamp outside the years 1000–9999.
 */
import { ACCEL_AXES, numAt, slotOf } from './message-data.sql.js';

/** Where a CSV column's value comes from. */
export type CsvCellSource = 'timestamp' | 'id' | 'device' | 'latitude' | 'longitude' | { key: string } | { accel: string };

/**
 * A float8 as String(number) writes it: PostgreSQL's float8 output (shortest digits that read back as the same
 * number, extra_float_digits ≥ 1) is the same text in fixed notation, which it uses from 1e-4 to below 1e15 and
 * JavaScript from 1e-7 to below 1e21; zero is '0' with either sign. `empty`: the cell of a NULL.
 */
const numberCell = (x: string, empty: string) => `CASE WHEN ${x} IS NULL THEN ${empty} WHEN ${x} = 0 THEN '0'
  WHEN abs(${x}) >= 1e-4::float8 AND abs(${x}) < 1e15::float8 THEN ${x}::text END`;

/**
 * A text value as protectText and quoteField write it: a leading apostrophe before = + - @ tab or CR (formula
 * protection), then quoted, its double quotes doubled, when it holds a comma, a double quote, CR or LF.
 */
const textCell = (s: string) => {
  const mark = `CASE WHEN left(${s}, 1) IN ('=', '+', '-', '@', E'\\t', E'\\r') THEN '''' ELSE '' END`;
  return `CASE WHEN ${s} ~ '[",\\r\\n]' THEN '"' || ${mark} || replace(${s}, '"', '""') || '"' ELSE ${mark} || ${s} END`;
};

/** txt's value under `key` as csvCell writes it: absent or null '', a string, a boolean, a list of strings joined by "; ". */
function txtCell(m: string, key: string): string {
  if (!/^[A-Za-z0-9_]+$/.test(key)) throw new Error(`not a parameter key: ${key}`);
  const v = `${m}.txt -> '${key}'`;
  const list = `(SELECT CASE WHEN bool_and(jsonb_typeof(e.v) = 'string') IS NOT FALSE
      THEN coalesce(string_agg(e.v #>> '{}', '; ' ORDER BY e.i), '') END
    FROM jsonb_array_elements(${v}) WITH ORDINALITY AS e(v, i))`;
  return `CASE coalesce(jsonb_typeof(${v}), 'null') WHEN 'null' THEN ''
    WHEN 'string' THEN ${textCell(`(${m}.txt ->> '${key}')`)}
    WHEN 'boolean' THEN ${m}.txt ->> '${key}'
    WHEN 'array' THEN (SELECT ${textCell('l.s')} FROM (SELECT ${list} AS s) l) END`;
}

function cellSql(m: string, c: CsvCellSource): string {
  if (c === 'timestamp') {
    return `CASE WHEN ${m}.ts >= '1000-01-01T00:00:00Z' AND ${m}.ts < '10000-01-01T00:00:00Z'
      THEN to_char(${m}.ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END`;
  }
  if (c === 'id') return `${m}.id::text`;
  if (c === 'device') return `${m}.device_id::text`;
  if (c === 'latitude') return numberCell(`ST_Y(${m}.location)`, "''");
  if (c === 'longitude') return numberCell(`ST_X(${m}.location)`, "''");
  if ('accel' in c) {
    if (!(ACCEL_AXES as readonly string[]).includes(c.accel)) throw new Error(`not an accelerometer axis: ${c.accel}`);
    return numberCell(numAt(m, `accel.${c.accel}`), "''");
  }
  // a parameter with a slot: its number there, else what txt holds under its key (a scalar's string)
  const slot = slotOf(c.key);
  return slot ? numberCell(`${m}.num[${slot}]`, txtCell(m, c.key)) : txtCell(m, c.key);
}

/**
 * The SQL expression of message `m`'s CSV record, CRLF included (`m`: a row of messages' id, device_id, ts, num, txt,
 * location); NULL when a cell is one JavaScript must write.
 */
export const csvRecord = (m: string, cells: readonly CsvCellSource[]): string =>
  `${cells.map((c) => `(${cellSql(m, c)})`).join(" || ',' || ")} || E'\\r\\n'`;
