import { describe, expect, it } from 'vitest';
import { corridorOutline } from '../../console/src/corridor.js';

/** The console's corridor outline: every point of it at the corridor's width from the line, and nothing missing. */
const R = 6371000;
const RAD = Math.PI / 180;
/** Meters from a [lat, lon] point to a [lon, lat] line, on the sphere's local plane at the point. */
function metersToLine([lat, lon]: [number, number], line: number[][]): number {
  const k = Math.cos(lat * RAD);
  const xy = ([x, y]: number[]) => [(x - lon) * R * RAD * k, (y - lat) * R * RAD];
  let best = Infinity;
  for (let i = 0; i < Math.max(1, line.length - 1); i++) {
    const [ax, ay] = xy(line[i]);
    const [bx, by] = xy(line[Math.min(i + 1, line.length - 1)]);
    const len2 = (bx - ax) ** 2 + (by - ay) ** 2;
    const u = len2 ? Math.max(0, Math.min(1, (-ax * (bx - ax) - ay * (by - ay)) / len2)) : 0;
    best = Math.min(best, Math.hypot(ax + u * (bx - ax), ay + u * (by - ay)));
  }
  return best;
}
const length = (piece: [number, number][]) => piece.slice(1).reduce((s, p, i) => s + metersToLine(p, [[piece[i][1], piece[i][0]]]), 0);

describe('corridor outline', () => {
  it('is one closed ring round a straight line: two sides and two half circles', () => {
    const line = [[-96.80, 32.78], [-96.79, 32.78]]; // ~936 m east
    const [ring, ...rest] = corridorOutline(line, 100);
    expect(rest).toEqual([]);
    expect(ring[0]).toEqual(ring[ring.length - 1]);
    for (const p of ring) expect(metersToLine(p, line)).toBeCloseTo(100, 0);
    const span = metersToLine([32.78, -96.79], [[-96.80, 32.78]]);
    expect(length(ring)).toBeCloseTo(2 * span + 2 * Math.PI * 100, -1);
  });

  it('cuts out the crossing offsets at the inside of a corner', () => {
    const line = [[-96.80, 32.78], [-96.79, 32.78], [-96.79, 32.79]]; // east, then north: a left turn
    const pieces = corridorOutline(line, 80);
    expect(pieces.length).toBeGreaterThanOrEqual(1);
    for (const piece of pieces) for (const p of piece) expect(metersToLine(p, line)).toBeGreaterThan(79.5);
    for (const piece of pieces) for (const p of piece) expect(metersToLine(p, line)).toBeLessThan(80.5);
    const total = pieces.reduce((s, piece) => s + length(piece), 0);
    // outer side: ~936 + ~1112 m plus a quarter circle; inner: each leg less 80 m; two end caps
    const [east, north] = [metersToLine([32.78, -96.79], [[-96.80, 32.78]]), metersToLine([32.79, -96.79], [[-96.79, 32.78]])];
    const expected = (east + north + (Math.PI / 2) * 80) + (east - 80 + north - 80) + 2 * Math.PI * 80;
    expect(total).toBeGreaterThan(expected * 0.98);
    expect(total).toBeLessThan(expected * 1.02);
  });

  it('draws a circle round a single point and nothing for no width', () => {
    const [ring] = corridorOutline([[-96.8, 32.78]], 50);
    for (const p of ring) expect(metersToLine(p, [[-96.8, 32.78]])).toBeCloseTo(50, 0);
    expect(corridorOutline([[-96.8, 32.78], [-96.79, 32.78]], 0)).toEqual([]);
  });

  it('outlines a dense winding GPS line of 10 000 points at its width', () => {
    const line = Array.from({ length: 10_000 }, (_, i) => [-96.8 + i * 0.0001, 32.78 + 0.002 * Math.sin(i / 50)]);
    const pieces = corridorOutline(line, 30);
    const points = pieces.flat();
    expect(points.length).toBeGreaterThan(100);
    // simplified to a fiftieth of the width: within 2% of it
    for (const p of points.filter((_, i) => i % 97 === 0)) expect(Math.abs(metersToLine(p, line) - 30)).toBeLessThan(0.6);
  });
});
