import { PARAMETERS } from '../../lib/catalog.js';
import { fmt } from './dom.js';
import type { ActiveHours, Boundary, Rule } from './records.js';

/**
 * A rule's boundaries and options in words, for the rule list: one phrase per boundary, then one per option the
 * rule sets (an option left out reads as nothing). Plain strings: the list sets them as text.
 */

/** 45 s, 2 min, 2 min 30 s, 1 h 5 min: the unit parts that are not zero. */
export function secondsText(total: number): string {
  const [h, m, s] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), Math.round(total % 60)];
  return [h ? `${h} h` : '', m ? `${m} min` : '', s || total === 0 ? `${s} s` : ''].filter(Boolean).join(' ');
}
const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

/** Meters along a [lon, lat] line (haversine), for the corridor's length. */
function lineLength(coordinates: number[][]): number {
  const rad = Math.PI / 180;
  let sum = 0;
  for (let i = 1; i < coordinates.length; i++) {
    const [[lon1, lat1], [lon2, lat2]] = [coordinates[i - 1], coordinates[i]];
    const a = Math.sin(((lat2 - lat1) * rad) / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(((lon2 - lon1) * rad) / 2) ** 2;
    sum += 2 * 6371000 * Math.asin(Math.min(1, Math.sqrt(a)));
  }
  return sum;
}

export function boundaryText(b: Boundary): string {
  const buffer = 'bufferMeters' in b && b.bufferMeters ? `, buffer ${fmt.km(b.bufferMeters)}` : '';
  switch (b.type) {
    case 'radius': return `radius ${fmt.km(b.radius)}${buffer}`;
    case 'polygon': return `polygon of ${Math.max(0, (b.coordinates[0]?.length ?? 1) - 1)} vertices${buffer}`;
    case 'corridor': return `corridor ${fmt.km(lineLength(b.coordinates))} long, ${fmt.km(b.widthMeters)} either side${buffer}`;
    case 'parametric': {
      const unit = PARAMETERS.get(b.parameter)?.units;
      const u = unit ? ` ${unit}` : '';
      const range = b.min != null && b.max != null ? `${b.min}–${b.max}${u}` : b.min != null ? `≥ ${b.min}${u}` : `≤ ${b.max}${u}`;
      return `${PARAMETERS.get(b.parameter)?.name ?? b.parameter} ${range}${b.deadband ? `, deadband ${b.deadband}${u}` : ''}`;
    }
  }
}

/** Days as ranges where they run on: mon, tue, wed, fri → "Mon–Wed, Fri". */
function daysText(days: string[]): string {
  const idx = [...new Set(days.map((d) => DAYS.indexOf(d)).filter((i) => i >= 0))].sort((a, b) => a - b);
  if (idx.length === 7) return 'every day';
  const name = (i: number) => DAYS[i][0].toUpperCase() + DAYS[i].slice(1);
  const runs: string[] = [];
  for (let i = 0; i < idx.length; i++) {
    let j = i;
    while (j + 1 < idx.length && idx[j + 1] === idx[j] + 1) j++;
    runs.push(j - i >= 2 ? `${name(idx[i])}–${name(idx[j])}` : idx.slice(i, j + 1).map(name).join(', '));
    i = j;
  }
  return runs.join(', ');
}

export function activeHoursText(a: ActiveHours): string {
  const windows = a.windows.map((w) => `${daysText(w.days)} ${w.from === w.until ? 'all day' : `${w.from}–${w.until}`}`);
  return `active ${windows.join('; ')} (${a.timeZone})`;
}

/** The rule's options that are set, each a phrase. */
export function optionTexts(r: Rule): string[] {
  const out: string[] = [];
  const dwell = [r.minInsideSeconds ? `${secondsText(r.minInsideSeconds)} inside` : '', r.minOutsideSeconds ? `${secondsText(r.minOutsideSeconds)} outside` : ''].filter(Boolean);
  if (dwell.length) out.push(`dwell ${dwell.join(', ')}`);
  if (r.detectCrossings) out.push('crossings between fixes detected');
  if (r.activeHours) out.push(activeHoursText(r.activeHours));
  return out;
}
