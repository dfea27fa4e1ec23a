import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { deliveryKit } from '../workers/helpers.js';
import { CLAIM, RECORD_ATTEMPTS } from '../../db/repositories/notifications.repository.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });
const kit = deliveryKit(() => t);

/** Rows of `notifications` each scan of the plan read (kept and filtered out). */
function notificationReads(plan: unknown): number[] {
  const reads: number[] = [];
  const walk = (n: any) => {
    if (n['Relation Name'] === 'notifications' || /^notifications/.test(n['Index Name'] ?? '')) {
      reads.push(n['Actual Rows'] * (n['Actual Loops'] ?? 1) + (n['Rows Removed by Filter'] ?? 0));
    }
    for (const c of n.Plans ?? []) walk(c);
  };
  walk((typeof plan === 'string' ? JSON.parse(plan) : plan)[0].Plan);
  return reads;
}

/** A backlog of `n` queued notifications of one event, analyzed. */
async function backlog(n: number): Promise<void> {
  const { subscription, device } = await kit.subscribed('http://127.0.0.1:9/r');
  const [event] = await kit.fire([{ deviceId: device.id }]);
  await t.db.knex('notifications').where({ event_id: event.id }).del();
  // a batch's notifications are all due at the same instant (the events' storage time): here 1,000 per instant
  await t.db.knex.raw(`INSERT INTO notifications (id, event_id, subscription_id, application_id, device_id, url, state, created_at, next_attempt_at)
    SELECT gen_random_uuid(), ?, s.id, s.application_id, s.device_id, s.url, 'queued', now(), now() - make_interval(mins => i / 1000)
    FROM subscriptions s, generate_series(1, ?) i WHERE s.id = ?`, [event.id, n, subscription.id]);
  await t.db.knex.raw('ANALYZE notifications');
}

describe('the delivery queue\'s claim (migration 015)', () => {
  it('reads the rows it leases and those leased by calls in flight, not the whole backlog', { timeout: 60_000 }, async () => {
    await backlog(5000);
    // 16 calls in flight: their rows are leased, still due, and skipped by the next claim
    expect(await t.repos.notifications.claim(16, 60_000)).toHaveLength(16);
    // EXPLAIN ANALYZE runs the claim: it leases 16 more, as a worker's next claim would
    const { rows } = await t.db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM}`, [16, 60_000]);
    const reads = notificationReads(rows[0]['QUERY PLAN']);
    expect(reads.length).toBeGreaterThan(0);
    // 16 leased and skipped, 16 taken (plus the claimed rows' own reads): ordered by the index, not sorted
    expect(Math.max(...reads)).toBeLessThanOrEqual(64);
  });
});

describe('recording a burst of attempts', () => {
  it('reads the notifications it records through their key, not the backlog, in the generic plan', { timeout: 60_000 }, async () => {
    await backlog(5000);
    const claimed = await t.repos.notifications.claim(20, 60_000);
    expect(claimed).toHaveLength(20);
    const at = new Date().toISOString();
    const items = claimed.map((n) => ({
      id: n.id, prev: n.attempts, attempt_id: randomUUID(), state: 'complete', response_code: 204, response: '',
      notified_at: at, responded_at: at, retry_ms: null, payload: '{}',
    }));
    // what a prepared statement runs: the generic plan, which cannot know how many attempts the recordset holds
    const plan = await t.db.knex.transaction(async (trx) => {
      await trx.raw('SET LOCAL plan_cache_mode = force_generic_plan');
      await trx.raw(`PREPARE record_probe(json) AS ${RECORD_ATTEMPTS.replace('?::json', '$1::json')}`);
      const literal = `'${JSON.stringify(items).replace(/'/g, "''")}'`;
      const { rows } = await trx.raw(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE record_probe(${literal})`);
      await trx.raw('DEALLOCATE record_probe');
      return rows[0]['QUERY PLAN'];
    });
    const reads = notificationReads(plan);
    expect(reads.length).toBeGreaterThan(0);
    // the 20 recorded rows (a bitmap scan may read each id's index entries twice), never the 5,000
    expect(Math.max(...reads)).toBeLessThanOrEqual(40);
    // and it recorded them
    const ids = claimed.map((n) => n.id);
    const done = await t.db.knex('notifications').whereIn('id', ids).where({ state: 'complete' }).count({ n: '*' });
    expect(Number(done[0].n)).toBe(20);
    expect(Number((await t.db.knex('notification_attempts').whereIn('notification_id', ids).count({ n: '*' }))[0].n)).toBe(20);
  });
});
