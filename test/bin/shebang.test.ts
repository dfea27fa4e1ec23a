// The `drivewire` binary's shebang sets what must be in place before Node starts (bin/drivewire.js explains each):
// glibc's malloc threshold in the environment, V8's young-generation size as a flag. Runs the shebang's own command
// line, so a typo in it (or an `env` that cannot split it) fails here rather than on a user's first `npm start`.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/drivewire.js');

describe('the drivewire shebang', () => {
  it('starts Node with the malloc threshold in its environment and the semi-space flag', () => {
    const first = fs.readFileSync(bin, 'utf8').split('\n')[0];
    const [interpreter, ...rest] = first.slice(2).split(' ');
    expect(interpreter).toBe('/usr/bin/env');
    expect(rest[0]).toBe('-S');
    const probe = 'console.log(JSON.stringify({ mmap: process.env.MALLOC_MMAP_THRESHOLD_, flags: process.execArgv }))';
    const out = JSON.parse(execFileSync(interpreter, ['-S', rest.slice(1).join(' '), '-e', probe], { encoding: 'utf8' }));
    expect(out.mmap).toBe('131072');
    expect(out.flags).toContain('--max-semi-space-size=64');
  });

  it('is executable, so that package.json scripts and npm link run it through the shebang', () => {
    expect(fs.statSync(bin).mode & 0o111).not.toBe(0);
  });
});
