// Whether dist/ (bin/build.js) holds the current sources: plain JavaScript, read by the launcher before anything is
// compiled. A build is used only while no source file is newer than the time it was made (a checkout, a pull or an
// edit since makes it stale, and the launcher falls back to tsx: slower, never wrong).
import fs from 'node:fs';
import path from 'node:path';

/** The folders compiled to dist/ (tsconfig.json's, less test/). */
export const SOURCE_DIRS = ['bin', 'lib', 'db', 'gateway', 'simulator', 'api', 'workers', 'bench'];
/** dist/'s stamp: the time (ms) the build read the sources. */
export const BUILT_STAMP = '.built';

/** Files under the source folders, relative to `root` with '/' separators (bench/results, kept figures, left out). */
export function sourceFiles(root) {
  const out = [];
  const walk = (rel) => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) { if (child !== 'bench/results') walk(child); } else if (entry.isFile()) out.push(child);
    }
  };
  for (const dir of SOURCE_DIRS) walk(dir);
  return out;
}

/** True when `root`/dist was built after the last change to any source file (and to package.json). */
export function distIsFresh(root) {
  let built;
  try {
    built = Number(fs.readFileSync(path.join(root, 'dist', BUILT_STAMP), 'utf8'));
  } catch {
    return false;
  }
  if (!Number.isFinite(built)) return false;
  for (const f of [...sourceFiles(root), 'package.json']) {
    if (fs.statSync(path.join(root, f)).mtimeMs > built) return false;
  }
  return true;
}
