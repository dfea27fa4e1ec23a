import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (console sources, node_modules) seen from this file. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const CONSOLE_SRC = path.join(ROOT, 'console');
/** Where the bundle is kept between starts; rebuilt when an input is newer than it. */
export const CONSOLE_CACHE = path.join(ROOT, 'node_modules', '.cache', 'drivewire', 'console');

/**
 * Names the bundle after where the console sources really are: checkouts that share one node_modules (git worktrees
 * linking to it) each keep their own bundle instead of serving, and rebuilding over, another's. A dist/ build links
 * to the same sources, so it shares the bundle of its checkout.
 */
async function sourcesKey(): Promise<string> {
  const real = await fs.realpath(CONSOLE_SRC).catch(() => CONSOLE_SRC);
  return createHash('sha256').update(real).digest('hex').slice(0, 12);
}

/** The cache directory, or one in the system's temporary folder when node_modules is read-only (an image, a CI cache). */
export async function consoleCacheDir(): Promise<string> {
  const key = await sourcesKey();
  for (const base of [CONSOLE_CACHE, path.join(os.tmpdir(), `drivewire-console-${process.getuid?.() ?? 'user'}`)]) {
    const dir = path.join(base, key);
    try {
      await fs.mkdir(dir, { recursive: true });
      await fs.access(dir, fsConstants.W_OK);
      return dir;
    } catch { /* try the next one */ }
  }
  throw new Error(`no writable directory for the console bundle (tried ${CONSOLE_CACHE} and the temporary folder)`);
}
const META = 'build-meta.json';
/** Files the bundle consists of, as served under /console/. */
export const BUNDLE_FILES = ['app.js', 'app.css'] as const;

interface BuildMeta { builtAt: number; inputs: string[]; bytes: Record<string, number> }

async function mtime(file: string): Promise<number> {
  try {
    return (await fs.stat(file)).mtimeMs;
  } catch {
    return Infinity; // a removed input (or output) makes the cache stale
  }
}

/** The cached bundle is current when every input of the last build (and index.html) is older than it. */
async function isCurrent(dir: string): Promise<BuildMeta | null> {
  let meta: BuildMeta;
  try {
    meta = JSON.parse(await fs.readFile(path.join(dir, META), 'utf8')) as BuildMeta;
  } catch {
    return null;
  }
  const inputs = [...meta.inputs.map((f) => path.join(ROOT, f)), path.join(CONSOLE_SRC, 'index.html'), path.join(CONSOLE_SRC, 'tsconfig.json')];
  const times = await Promise.all(inputs.map(mtime));
  if (times.some((t) => t > meta.builtAt)) return null;
  const outs = await Promise.all(BUNDLE_FILES.map((f) => mtime(path.join(dir, f))));
  return outs.every((t) => Number.isFinite(t)) ? meta : null;
}

/**
 * Bundles console/src/main.ts (TypeScript, Leaflet, CSS, Leaflet's images inlined) with esbuild into the cache
 * directory, unless the cached bundle is current. Outputs are written aside and renamed into place, so
 * several processes starting at once (the test suite) never serve a half-written file.
 */
export async function ensureConsoleBundle(dir: string): Promise<{ rebuilt: boolean; bytes: Record<string, number> }> {
  const current = await isCurrent(dir);
  if (current) return { rebuilt: false, bytes: current.bytes };
  const { build } = await import('esbuild');
  const startedAt = Date.now();
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { app: path.join(CONSOLE_SRC, 'src', 'main.ts') },
    bundle: true, minify: true, format: 'iife', target: ['es2022'], platform: 'browser',
    outdir: dir, write: false, metafile: true, logLevel: 'silent', legalComments: 'none',
    loader: { '.png': 'dataurl', '.svg': 'dataurl' },
    tsconfig: path.join(CONSOLE_SRC, 'tsconfig.json'),
  });
  const bytes: Record<string, number> = {};
  const tag = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  for (const out of result.outputFiles) {
    const name = path.basename(out.path);
    bytes[name] = out.contents.byteLength;
    await fs.writeFile(path.join(dir, `${name}.${tag}.tmp`), out.contents);
    await fs.rename(path.join(dir, `${name}.${tag}.tmp`), path.join(dir, name));
  }
  const meta: BuildMeta = { builtAt: startedAt, inputs: Object.keys(result.metafile.inputs), bytes };
  await fs.writeFile(path.join(dir, `${META}.${tag}.tmp`), JSON.stringify(meta));
  await fs.rename(path.join(dir, `${META}.${tag}.tmp`), path.join(dir, META));
  return { rebuilt: true, bytes };
}
