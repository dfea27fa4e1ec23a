// The platform's timer-driven readers stop before its pool closes (bin/platform.ts close): stopped, each starts no
// query, and the stop resolves once the query in flight has its answer. A query still queued for a connection when the
// pool closes would be aborted, and knex would print the abort on stdout (ahead of a bench's JSON, for one).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { followApiUrl } from '../../bin/roles.js';
import { createAccessWatcher } from '../../db/access-watch.js';
import { silentLogger } from '../../lib/logger.js';
import type { Config } from '../../lib/config.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });

/**
 * The reader's queries (by `match`), started and answered; `stop` is called as its `nth` query is sent, and its promise
 * kept. Resolves with what was seen once the stop resolved, and again after a pause.
 */
async function stopAtQuery(match: RegExp, nth: number, start: () => Promise<() => Promise<void>>) {
  const started = new Set<string>();
  const answered = new Set<string>();
  let stop: (() => Promise<void>) | null = null;
  // what had been started and answered when the stop resolved, read at that moment
  let stopping: Promise<{ started: number; answered: number }> | null = null;
  const onQuery = (q: { sql: string; __knexQueryUid: string }) => {
    if (!match.test(q.sql)) return;
    started.add(q.__knexQueryUid);
    if (started.size === nth && stop) stopping = Promise.resolve(stop()).then(() => ({ started: started.size, answered: answered.size }));
  };
  const onAnswer = (_r: unknown, q: { __knexQueryUid: string }) => { if (started.has(q.__knexQueryUid)) answered.add(q.__knexQueryUid); };
  const onError = (_e: unknown, q: { __knexQueryUid: string }) => onAnswer(null, q);
  t.db.knex.on('query', onQuery).on('query-response', onAnswer).on('query-error', onError);
  try {
    stop = await start();
    await expect.poll(() => stopping !== null, { timeout: 10_000, interval: 1 }).toBe(true);
    const atStop = await stopping!;
    await new Promise((r) => setTimeout(r, 200));
    return { atStop, after: { started: started.size, answered: answered.size } };
  } finally {
    t.db.knex.removeListener('query', onQuery).removeListener('query-response', onAnswer).removeListener('query-error', onError);
  }
}

describe('timer-driven readers, stopped', () => {
  it('the announced API URL: no read after the stop, and the stop waits for the read in flight', async () => {
    const config = { only: ['gateway'], publicUrl: null } as unknown as Config;
    const seen = await stopAtQuery(/deployment_urls/, 2, () => followApiUrl(t.db.knex, config, silentLogger, 10));
    expect(seen.atStop).toEqual({ started: 2, answered: 2 });
    expect(seen.after).toEqual(seen.atStop);
  });

  it('the live stream\'s access checks: no check after the close, and the close waits for the check in flight', async () => {
    const app = await t.make.application();
    const device = await t.make.device(app.principal);
    const access = createAccessWatcher(t.db.knex, 10);
    let lost = 0;
    const seen = await stopAtQuery(/FROM unnest\(.*AS w\(app_id/s, 2, async () => {
      access.watch(app.principal, device.id, () => { lost++; });
      return () => access.close();
    });
    expect(seen.atStop).toEqual({ started: 2, answered: 2 });
    expect(seen.after).toEqual(seen.atStop);
    expect(lost).toBe(0);
  });
});
