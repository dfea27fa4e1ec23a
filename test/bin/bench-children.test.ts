// The bench's child processes (bare Aedes, the connections scenario's load, the webhook receiver) end with the bench
// process, even one killed before it could tell them to close: otherwise a webhook receiver, say, would go on
// listening after its bench is gone.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CHILDREN = ['bare-aedes.child.js', 'connections.child.js', 'webhook-receiver.child.js'];

describe('bench child processes', () => {
  it.each(CHILDREN)('%s exits once its IPC channel to the bench process is gone', { timeout: 30_000 }, async (file) => {
    const child = fork(fileURLToPath(new URL(`../../bench/${file}`, import.meta.url)), [],
      { serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      child.on('message', (m: { type: string }) => { if (m.type === 'ready') resolve(); });
      child.once('exit', (code) => reject(new Error(`${file} exited with ${code} before it was ready`)));
    });
    // what the channel does when the bench process dies, whatever killed it
    child.disconnect();
    const code = await Promise.race([exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 10_000))]);
    if (code === 'running') child.kill('SIGKILL');
    expect(code).toBe(0);
  });
});
