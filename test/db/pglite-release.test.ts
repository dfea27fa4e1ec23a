// db/pglite-postgis.ts releaseLoadedPostgis: a migrated PGlite drops what it keeps of the PostGIS bundle (the unpacked
// bundle, the library's file, the install script), and PostGIS goes on answering, functions not called before included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateLatest } from '../../db/migrate.js';
import { releaseLoadedPostgis } from '../../db/pglite-postgis.js';
import { createTestDb } from '../helpers/db.js';
import { pgliteOf } from '../../db/connection.js';

let db: Awaited<ReturnType<typeof createTestDb>>;
beforeAll(async () => { db = await createTestDb(); });
afterAll(async () => { await db?.close(); });

const SQUARE = `ST_GeomFromGeoJSON('{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}')`;
const BEFORE = `SELECT ST_Distance('SRID=4326;POINT(0 0)'::geography, 'SRID=4326;POINT(1 1)'::geography) AS d,
  ST_Covers(${SQUARE}::geography, 'SRID=4326;POINT(0.5 0.5)'::geography) AS inside`;
// PostGIS functions this database has not called yet: each C symbol is looked up at its first call
const AFTER = `SELECT ST_Area(${SQUARE}::geography) AS area, ST_AsText(ST_Centroid(${SQUARE})) AS centre,
  ST_Length(ST_MakeLine(ST_MakePoint(0, 0), ST_MakePoint(3, 4))) AS len`;

interface MemFs { analyzePath(p: string): { exists: boolean }; stat(p: string): { size: number }; readdir(p: string): string[] }

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('PGlite after its migrations', () => {
  it('frees the PostGIS bundle, library file and install script, and PostGIS still answers', async () => {
    const pglite = pgliteOf(db.knex)!;
    const mod = pglite.Module as unknown as { FS: MemFs; pg_extensions?: unknown };
    const before = (await db.knex.raw(BEFORE)).rows[0];
    expect(mod.pg_extensions).toBeDefined();
    const library = '/pglite/lib/postgresql/postgis-3.so';
    expect(mod.FS.stat(library).size).toBeGreaterThan(10_000_000);

    const freed = await releaseLoadedPostgis(pglite);
    expect(freed).toBeGreaterThan(20_000_000);
    expect(mod.pg_extensions).toBeUndefined();
    expect(mod.FS.stat(library).size).toBe(0);
    expect(mod.FS.readdir('/pglite/share/postgresql/extension').filter((f) => f.startsWith('postgis--'))).toEqual([]);
    expect(mod.FS.analyzePath('/pglite/share/proj/proj.db').exists).toBe(true); // geography reads PROJ's database

    expect((await db.knex.raw(BEFORE)).rows[0]).toEqual(before);
    const after = (await db.knex.raw(AFTER)).rows[0];
    expect(after.area).toBeCloseTo(12_308_778_361, -3);
    expect(after).toMatchObject({ centre: 'POINT(0.5 0.5)', len: 5 });
    // migrateLatest runs it on every start; a second time frees nothing more
    expect(await migrateLatest(db.knex)).toEqual([]);
    expect(await releaseLoadedPostgis(pglite)).toBe(0);
  });
});
