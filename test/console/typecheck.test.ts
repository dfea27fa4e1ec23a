import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The console is browser code (DOM lib), outside the server's tsconfig: it is type-checked here (and by `npm run typecheck`). */
describe('console sources', () => {
  it('type-check strictly against the DOM library', async () => {
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const out = await promisify(execFile)(process.execPath, [tsc, '--noEmit', '-p', path.join(ROOT, 'console')], { cwd: ROOT })
      .then(() => '', (err: { stdout?: string }) => err.stdout ?? String(err));
    expect(out).toBe('');
  }, 60_000);
});
