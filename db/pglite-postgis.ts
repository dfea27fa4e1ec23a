// PostGIS for the embedded PGlite, without what drivewire never loads. The published bundle
// (@electric-sql/pglite-postgis) holds postgis, postgis_raster and postgis_topology; PGlite compiles
// every `.so` of a bundle at start, so the two unused libraries would cost time to ready and resident memory on
// every start (docs/development/performance.md). The slim bundle is cut once from the installed one and cached next to
// it; if that fails the full one is used.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { postgis } from '@electric-sql/pglite-postgis';
import type { Extension, PGlite } from '@electric-sql/pglite';

/** Entries drivewire needs: the core library, its control and install script, and PROJ's database. */
const KEEP = [
  /^lib\/postgresql\/postgis-3\.so$/,
  /^share\/postgresql\/extension\/postgis\.control$/,
  /^share\/postgresql\/extension\/postgis--\d+\.\d+\.\d+\.sql$/,
  /^share\/proj\//,
];

function keep(name: string): boolean {
  const n = name.replace(/^\.\//, '');
  return n.endsWith('/') || KEEP.some((re) => re.test(n));
}

function installedBundle(): { file: string; version: string } {
  const require = createRequire(import.meta.url);
  const dist = path.dirname(require.resolve('@electric-sql/pglite-postgis')); // the package exports no package.json
  const { version } = JSON.parse(fs.readFileSync(path.join(dist, '..', 'package.json'), 'utf8')) as { version: string };
  return { file: path.join(dist, 'postgis.tar.gz'), version };
}

/** Copies the kept entries of the installed bundle into `target` (written aside, then renamed). */
async function cutBundle(source: string, target: string): Promise<void> {
  const extract = tar.extract();
  const pack = tar.pack();
  extract.on('entry', (header, stream, next) => {
    if (!keep(header.name)) { stream.on('end', next); stream.resume(); return; }
    stream.pipe(pack.entry(header, next));
  });
  extract.on('finish', () => pack.finalize());
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  await Promise.all([
    pipeline(fs.createReadStream(source), createGunzip(), extract),
    pipeline(pack, createGzip(), fs.createWriteStream(tmp)),
  ]);
  fs.renameSync(tmp, target);
}

export async function slimBundle(): Promise<URL> {
  const { file, version } = installedBundle();
  const target = path.join(path.dirname(file), '..', '..', '..', '.cache', 'drivewire', `postgis-${version}-slim.tar.gz`);
  if (!fs.existsSync(target)) await cutBundle(file, target);
  return new URL(`file://${target}`);
}

/**
 * The PostGIS extension for PGlite, loading only `postgis-3.so`. Same environment as the published
 * extension (PROJ data path); `warn` hears why the full bundle was used instead.
 */
export function slimPostgis(warn?: (msg: string) => void): Extension {
  return {
    name: 'postgis',
    async setup(pg, emscriptenOpts) {
      const full = await postgis.setup(pg, emscriptenOpts);
      try {
        return { ...full, bundlePath: await slimBundle() };
      } catch (err) {
        warn?.(`using the full PostGIS bundle: ${(err as Error).message}`);
        return full;
      }
    },
  };
}

/** Where PGlite's in-memory file system holds the extension's files once its bundle is unpacked. */
const RELEASED = {
  library: 'lib/postgresql/postgis-3.so',
  installScripts: { dir: 'share/postgresql/extension', name: /^postgis--\d+\.\d+\.\d+\.sql$/ },
};

interface MemFs {
  analyzePath(p: string): { exists: boolean };
  readdir(p: string): string[];
  stat(p: string): { size: number };
  unlink(p: string): void;
  truncate(p: string, length: number): void;
}

/**
 * Frees what a started, migrated PGlite keeps of the PostGIS bundle and will not read again, a large part of the
 * embedded platform's idle memory (with the trimming of lib/malloc-trim.ts; docs/development/performance.md):
 * - the bundle itself, unpacked: PGlite keeps the promise of its extensions' bundles on its Emscripten module
 *   (`pg_extensions`), so the Blob of the unpacked tar (many small chunks in the malloc heap) outlived the
 *   unpacking into the in-memory file system, its only reader;
 * - the library's file: PostgreSQL reads it only to load it, and a loaded library is found again by its
 *   name, never reopened; the file is kept, empty, since its path must still exist;
 * - the install script: read only by `CREATE EXTENSION`, which the migrations have run.
 * A new process unpacks the bundle again. Returns the bytes of the files freed.
 */
export async function releaseLoadedPostgis(pglite: PGlite): Promise<number> {
  await pglite.query('SELECT postgis_lib_version()'); // loads the library into the backend, if nothing has yet
  const mod = pglite.Module as unknown as { FS: MemFs; WASM_PREFIX?: string; pg_extensions?: unknown };
  delete mod.pg_extensions;
  const root = mod.WASM_PREFIX ?? '/pglite';
  const memfs = mod.FS;
  let freed = 0;
  const library = `${root}/${RELEASED.library}`;
  if (memfs.analyzePath(library).exists) {
    freed += memfs.stat(library).size;
    memfs.truncate(library, 0);
  }
  const dir = `${root}/${RELEASED.installScripts.dir}`;
  for (const name of memfs.analyzePath(dir).exists ? memfs.readdir(dir) : []) {
    if (!RELEASED.installScripts.name.test(name)) continue;
    freed += memfs.stat(`${dir}/${name}`).size;
    memfs.unlink(`${dir}/${name}`);
  }
  return freed;
}
