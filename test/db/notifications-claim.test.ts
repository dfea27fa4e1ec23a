import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { deliveryKit } from '../workers/helpers.js';
import { CLAIM } from '../../db/repositories/notifications.repository.js';

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

describe('the delivery queue\'s claim (migration 015)', () => {
  it('reads the rows it leases and those leased by calls in flight, not the whole backlog', { timeout: 60_000 }, async () => {
    // a batch's notifications are all due at the same instant (the events' storage time): here 1,000 per instant
    const { subscription, device } = await kit.subscribed('http://127.0.0.1:9/r');
    const [event] = await kit.fire([{ deviceId: device.id }]);
    await t.db.knex('notifications').where({ event_id: event.id }).del();
    await t.db.knex.raw(`INSERT INTO notifications (id, event_id, subscription_id, application_id, device_id, url, state, created_at, next_attempt_at)
      SELECT gen_random_uuid(), ?, s.id, s.application_id, s.device_id, s.url, 'queued', now(), now() - make_interval(mins => i / 1000)
      FROM subscriptions s, generate_series(1, 5000) i WHERE s.id = ?`, [event.id, subscription.id]);
    await t.db.knex.raw('ANALYZE notifications');
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
