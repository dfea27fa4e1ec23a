// GPX → coordinates for route-import.ts: <trk><trkseg><trkpt lat lon>, else <rte><rtept lat lon>.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { LonLat } from './geo.js';

export class ImportProblem extends Error {}

export interface ParsedRoute {
  name?: string;
  description?: string;
  /** [lon, lat] */
  coordinates: LonLat[];
}

type XmlNode = Record<string, unknown>;
const LISTS = new Set(['trk', 'trkseg', 'trkpt', 'rte', 'rtept']);
const META = XMLParser.getMetaDataSymbol() as unknown as string;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** `lineOffset` = lines removed before `xml` (trimmed blank lines), so messages cite file lines. */
export function parseGpx(xml: string, lineOffset = 0): ParsedRoute {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw new ImportProblem(`line ${valid.err.line + lineOffset}: not valid XML (${valid.err.msg})`);
  const doc = new XMLParser({
    ignoreAttributes: false, attributeNamePrefix: '@_', captureMetaData: true, removeNSPrefix: true,
    parseTagValue: false, parseAttributeValue: false, isArray: (name) => LISTS.has(name),
  }).parse(xml) as XmlNode;
  const gpx = doc.gpx as XmlNode | undefined;
  if (!gpx || typeof gpx !== 'object') {
    const root = Object.keys(doc).find((k) => !k.startsWith('?')) ?? 'nothing';
    throw new ImportProblem(`root element is <${root}>, expected <gpx>`);
  }
  const tracks = list(gpx.trk);
  const routes = list(gpx.rte);
  const trkpts = tracks.flatMap((t) => list(t.trkseg).flatMap((s) => list(s.trkpt)));
  const [kind, points] = trkpts.length ? ['trkpt', trkpts] : ['rtept', routes.flatMap((r) => list(r.rtept))];
  if (!points.length) throw new ImportProblem('the GPX file has no <trkpt> or <rtept> points');
  const lineAt = lineIndex(xml, lineOffset);
  const coordinates = points.map((p, i) => {
    const start = (p[META] as { startIndex?: number } | undefined)?.startIndex;
    const where = start === undefined ? `${kind}[${i}]` : `line ${lineAt(start)}: ${kind}`;
    return [coordinate(p, 'lon', 180, where), coordinate(p, 'lat', 90, where)] as LonLat;
  });
  const owner = trkpts.length ? tracks[0] : routes[0];
  const metadata = (gpx.metadata ?? {}) as XmlNode;
  return {
    name: text(owner?.name) ?? text(metadata.name),
    description: text(owner?.desc) ?? text(metadata.desc),
    coordinates,
  };
}

function coordinate(point: XmlNode, attr: 'lat' | 'lon', limit: number, where: string): number {
  const raw = point[`@_${attr}`];
  if (raw === undefined) throw new ImportProblem(`${where} has no ${attr} attribute`);
  const value = String(raw).trim();
  if (!NUMBER.test(value)) throw new ImportProblem(`${where} ${attr}=${JSON.stringify(raw)} is not a number`);
  if (Math.abs(Number(value)) > limit) {
    throw new ImportProblem(`${where} ${attr}=${JSON.stringify(raw)} is out of range -${limit}..${limit}`);
  }
  return Number(value);
}

function list(value: unknown): XmlNode[] {
  return Array.isArray(value) ? value.filter((v): v is XmlNode => typeof v === 'object' && v !== null) : [];
}

function text(value: unknown): string | undefined {
  const s = typeof value === 'string' ? value : (value as XmlNode | undefined)?.['#text'];
  return typeof s === 'string' && s.trim() ? s.trim() : undefined;
}

/** Maps a character offset to a 1-based line number. */
function lineIndex(source: string, lineOffset: number): (offset: number) => number {
  const starts = [0];
  for (let i = source.indexOf('\n'); i !== -1; i = source.indexOf('\n', i + 1)) starts.push(i + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1 + lineOffset;
  };
}
