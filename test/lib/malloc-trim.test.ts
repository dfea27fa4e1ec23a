// lib/malloc-trim.ts: glibc's freed heap memory goes back to the system when trimmed (a real child process, a real
// fragmented heap); where trimming is not available nothing breaks.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadMallocTrim, trimWhenIdle } from '../../lib/malloc-trim.js';

const CHILD = fileURLToPath(new URL('../fixtures/malloc-trim.child.ts', import.meta.url));
const glibc = process.platform === 'linux' && Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);

describe('malloc trim', () => {
  it.runIf(glibc)('gives the freed blocks between live ones back to the system', () => {
    const out = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', CHILD], { encoding: 'utf8' }));
    expect(out).toMatchObject({ available: true, trimmed: true, kept: 2000 });
    expect((out.before - out.after) / 2 ** 20).toBeGreaterThan(16); // of the 32 MB freed
  });

  it('is a function where glibc is, null elsewhere; the idle trimming starts and stops', async () => {
    const trim = await loadMallocTrim();
    expect(trim === null).toBe(!glibc);
    if (trim) expect(typeof trim()).toBe('boolean');
    const idle = await trimWhenIdle(10);
    expect(idle === null).toBe(!glibc);
    await new Promise((r) => setTimeout(r, 30));
    await idle?.stop();
  });
});
