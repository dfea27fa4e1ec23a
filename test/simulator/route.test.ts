import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  decodeRoute, loadStoredRoutes, routeFileName, RouteDataError, serializeRoute, writeStoredRoute, DEFAULT_ROUTES_DIR,
} from '../../simulator/route.js';

describe('stored routes', () => {
  it('loads the seeded recorded routes from routes-data/, sorted by name', async () => {
    const names = (await loadStoredRoutes()).map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining([
      'DFW - Back Home', 'DFW - Circle the Block', 'DFW - Downtown Route 1', 'DFW - Downtown Route 2',
      'DFW - Home Loop 1 of 3', 'DFW - Home Loop 2 of 3', 'DFW - Home Loop 3 of 3',
    ]));
    expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b)));
  });

  it("decodes each polyline to within 1% of the route's distanceByGPS", async () => {
    for (const route of await loadStoredRoutes()) {
      const { line, lengthM } = decodeRoute(route);
      expect(line.type).toBe('LineString');
      expect(Math.abs(lengthM / route.distanceByGPS - 1)).toBeLessThan(0.01);
      for (const [lon, lat] of line.coordinates) {
        expect(lon).toBeCloseTo(-96.79, 0);
        expect(lat).toBeCloseTo(32.8, 0);
      }
    }
  });

  it('names files after the route in kebab-case', () => {
    expect(routeFileName({ name: 'DFW - Home Loop 1 of 3' })).toBe('dfw-home-loop-1-of-3.json');
  });

  it('writes a route that loads back unchanged, and the seeded files are in that format', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'routes-'));
    const [route] = await loadStoredRoutes();
    const withStops = { ...route, stops: [{ at: 100, seconds: 20 }] };
    await writeStoredRoute(withStops, dir);
    expect(await loadStoredRoutes(dir)).toEqual([withStops]);
    for (const r of await loadStoredRoutes()) {
      expect(await readFile(join(DEFAULT_ROUTES_DIR, routeFileName(r)), 'utf8')).toBe(serializeRoute(r));
    }
  });

  it('refuses a bad file naming the file and every problem', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'routes-'));
    await writeFile(join(dir, 'bad.json'), JSON.stringify({ id: 'x', name: '', description: '', polyline: '??', duration: 0, stops: [{ at: -1, seconds: 5 }] }));
    await expect(loadStoredRoutes(dir)).rejects.toThrow(RouteDataError);
    await expect(loadStoredRoutes(dir)).rejects.toThrow(
      /^bad\.json: name must be a non-empty string; messageCount must be a number >= 0; .*duration must be a number of milliseconds > 0; polyline: a route needs at least 2 points, got 1; stops\[0\]\.at must be meters >= 0$/,
    );
  });
});
