import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { deliveryKit } from '../workers/helpers.js';
import { CLAIM, RECORD_ATTEMPTS } from '../../db/repositories/notifications.repository.js';
import { endpointOf } from '../../db/repositories/subscriptions.repository.js';
import * as m031 from '../../db/migrations/031_webhook_endpoints.js';
import { isTable } from '../helpers/partitions.js';

let t: TestApp;
beforeAll(async () => { t = await buildTestApp(); });
afterAll(async () => { await t?.close(); });
const kit = deliveryKit(() => t);

/** Rows of `notifications` each scan of the plan read (kept and filtered out). */
function notificationReads(plan: unknown): number[] {
  const reads: number[] = [];
  const walk = (n: any) => {
    if (isTable(n['Relation Name'], 'notifications') || /^notifications/.test(n['Index Name'] ?? '')) {
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
  await t.db.knex.raw(`INSERT INTO notifications (id, event_id, subscription_id, application_id, device_id, url, endpoint, state, created_at, next_attempt_at)
    SELECT gen_random_uuid(), ?, s.id, s.application_id, s.device_id, s.url, s.endpoint, 'queued', now(), now() - make_interval(mins => i / 1000)
    FROM subscriptions s, generate_series(1, ?) i WHERE s.id = ?`, [event.id, n, subscription.id]);
  await t.db.knex.raw('ANALYZE notifications');
}

describe('the delivery queue\'s claim (migrations 015, 031)', () => {
  it('reads the rows it leases and those leased by calls in flight, not the whole backlog', { timeout: 60_000 }, async () => {
    await backlog(5000);
    // 16 calls in flight: their rows are leased, still due, and skipped by the next claim
    expect(await t.repos.notifications.claim(16, 60_000)).toHaveLength(16);
    // EXPLAIN ANALYZE runs the claim: it leases 16 more, as a worker's next claim would
    const { rows } = await t.db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM}`, [64, '{}', 64, '{}', 16, 60_000]);
    const reads = notificationReads(rows[0]['QUERY PLAN']);
    expect(reads.length).toBeGreaterThan(0);
    // 16 leased and skipped, 16 taken (plus the claimed rows' own reads): ordered by the index, not sorted
    expect(Math.max(...reads)).toBeLessThanOrEqual(64);
  });
});

describe('the claim\'s per-endpoint limit (migration 031)', () => {
  it('reads none of the backlog of an endpoint at its limit, and takes the other endpoints\' due rows', { timeout: 60_000 }, async () => {
    await t.db.knex.raw('DELETE FROM notifications');
    await backlog(5000); // one endpoint, due earlier than anything else
    const other = await kit.subscribed('http://127.0.0.2:9/other');
    const [event] = await kit.fire([{ deviceId: other.device.id }]);
    const slow = endpointOf('http://127.0.0.1:9/r');
    // this worker has 16 calls in flight to the slow endpoint: its limit
    const params = [16, JSON.stringify({ [slow]: 16 }), 64, '{}', 64, 60_000];
    const { rows } = await t.db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM}`, params);
    // the skip scan's descents and the one due row taken: none of the 5,000
    expect(Math.max(...notificationReads(rows[0]['QUERY PLAN']))).toBeLessThanOrEqual(4);
    const taken = await t.db.knex('notifications').whereNotNull('locked_until').select('event_id', 'endpoint');
    expect(taken).toEqual([{ event_id: event.id, endpoint: 'http://127.0.0.2:9' }]);
    // with room for 3 more, it takes 3 of the backlog, the earliest due
    const claimed = await t.repos.notifications.claim(64, 60_000, { perEndpoint: 16, calls: { [slow]: 13 } });
    expect(claimed.map((c) => c.endpoint)).toEqual([slow, slow, slow]);
  });
});

describe('migration 031', () => {
  it('runs again on a migrated database without a change, and gives rows stored before it the origin of their url', async () => {
    const { subscription, device } = await kit.subscribed('http://127.0.0.1:9/r');
    await m031.up(t.db.knex);
    const urls = ['https://User:Pw@Hooks.Example.COM:8443/a/b?c=1#d', 'http://127.0.0.1:9', 'HTTP://[2606:4700::1111]:8080/x',
      // default ports and a host that is not ASCII: the same endpoint as the URL's origin in the code
      'https://Hooks.Example.com:443/a', 'http://hooks.example.com:80/b', 'HTTP://[::1]:80/c', 'http://bücher.example:8080/d',
      'https://BÜCHER.example/e'];
    for (const url of urls) {
      await t.db.knex('subscriptions').where({ id: subscription.id }).update({ url, endpoint: '' });
      await m031.up(t.db.knex);
      const [row] = await t.db.knex('subscriptions').where({ id: subscription.id }).select('endpoint');
      expect(row.endpoint, url).toBe(endpointOf(url));
    }
    expect(device.id).toBeTruthy();
  });
});

describe('the claim and paused subscriptions', () => {
  it('leases none of the due notifications of a paused subscription and holds them, even left due by a pause that did not hold them', async () => {
    await t.db.knex.raw('DELETE FROM notifications');
    const paused = await kit.subscribed('http://127.0.0.1:9/paused');
    const active = await kit.subscribed('http://127.0.0.1:9/active');
    const [pe] = await kit.fire([{ deviceId: paused.device.id }]);
    const [ae] = await kit.fire([{ deviceId: active.device.id }]);
    // paused with its notification still due: a pause racing a fan-out, a lease expiring after the pause, a crash
    await t.db.knex('subscriptions').where({ id: paused.subscription.id }).update({ paused_at: new Date() });
    const claimed = await t.repos.notifications.claim(10, 60_000);
    expect(claimed.map((c) => c.eventId)).toEqual([ae.id]);
    const [held] = await kit.notificationsOf(pe.id);
    expect(held).toMatchObject({ paused: true, next_attempt_at: null, locked_until: null, state: 'queued' });
  });
});

describe('the claim beside another claim', () => {
  // PGlite has one connection: another worker's transaction cannot hold locks while this claim runs
  it.skipIf(!process.env.TEST_DATABASE_URL)('takes due rows past those another worker has locked, up to its limit', async () => {
    await t.db.knex.raw('DELETE FROM notifications');
    const { app, device } = await kit.subscribed('http://127.0.0.1:9/a');
    for (let i = 0; i < 3; i++) {
      await t.repos.subscriptions.create(app.principal, { deviceId: device.id, eventType: 'startup', url: `http://127.0.0.${i + 2}:9/b`, object: null, appData: null });
    }
    await kit.fire([{ deviceId: device.id }]);
    const due = (await t.db.knex('notifications').select('id', 'created_at').orderBy(['next_attempt_at', 'id'])).map((r: { id: string }) => r.id);
    expect(due).toHaveLength(4);
    // another worker's claim holds the locks of the two earliest (in its statement, not leased yet)
    let unlock!: () => void;
    const locked = new Promise<void>((r) => { unlock = r; });
    let ready!: () => void;
    const holding = new Promise<void>((r) => { ready = r; });
    const other = t.db.knex.transaction(async (trx) => {
      await trx.raw('SELECT id FROM notifications WHERE id = ANY(?::uuid[]) FOR UPDATE', [due.slice(0, 2)]);
      ready();
      await locked;
    });
    await holding;
    try {
      const claimed = await t.repos.notifications.claim(2, 60_000);
      expect(claimed.map((c) => c.id).sort()).toEqual(due.slice(2).sort());
    } finally {
      unlock();
      await other;
    }
  });
});

describe('the claim\'s per-application share', () => {
  it('takes no more of an application\'s due rows than its share less its calls in flight, across its endpoints', async () => {
    await t.db.knex.raw('DELETE FROM notifications');
    const x = await kit.subscribed('http://127.0.0.1:9/x');
    for (let i = 0; i < 7; i++) {
      await t.repos.subscriptions.create(x.app.principal, { deviceId: x.device.id, eventType: 'startup', url: `http://127.0.0.1:${100 + i}/x`, object: null, appData: null });
    }
    const y = await kit.subscribed('http://127.0.0.2:9/y');
    await kit.fire([{ deviceId: x.device.id }]);
    await kit.fire([{ deviceId: y.device.id }]);
    const claimed = await t.repos.notifications.claim(64, 60_000, {
      perEndpoint: 16, perApplication: 4, applicationCalls: { [x.app.id]: 1 },
    });
    const byApp = (id: string) => claimed.filter((c) => c.applicationId === id).length;
    expect([byApp(x.app.id), byApp(y.app.id)]).toEqual([3, 1]);
    expect(new Set(claimed.filter((c) => c.applicationId === x.app.id).map((c) => c.endpoint)).size).toBe(3);
  });
});

describe('the claim with one application\'s many endpoints', () => {
  it('visits a bounded number of an application\'s endpoints, and takes another application\'s due row past them', { timeout: 60_000 }, async () => {
    await t.db.knex.raw('DELETE FROM notifications');
    const { app, subscription, device } = await kit.subscribed('http://127.0.0.1:9/x');
    const [event] = await kit.fire([{ deviceId: device.id }]);
    await t.db.knex('notifications').where({ event_id: event.id }).del();
    // 1,000 endpoints (one port each), all of one application, due, and ordered before the other application's
    await t.db.knex.raw(`INSERT INTO notifications (id, event_id, subscription_id, application_id, device_id, url, endpoint, state, created_at, next_attempt_at)
      SELECT gen_random_uuid(), ?, s.id, s.application_id, s.device_id, s.url, 'http://127.0.0.1:' || (10000 + i), 'queued', now(), now() - interval '1 minute'
      FROM subscriptions s, generate_series(1, 1000) i WHERE s.id = ?`, [event.id, subscription.id]);
    const y = await kit.subscribed('http://127.0.0.2:9/y');
    const [yEvent] = await kit.fire([{ deviceId: y.device.id }]);
    await t.db.knex.raw('ANALYZE notifications');
    // the first application has no room left: one descent for it, then the other's endpoint
    const params = [16, '{}', 4, JSON.stringify({ [app.id]: 4 }), 64, 60_000];
    const { rows } = await t.db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM}`, params);
    expect(Math.max(...notificationReads(rows[0]['QUERY PLAN']))).toBeLessThanOrEqual(8);
    expect(await t.db.knex('notifications').whereNotNull('locked_until').pluck('event_id')).toEqual([yEvent.id]);
    // with room, at most CLAIM_ENDPOINTS_PER_APPLICATION (64) of its endpoints are visited, not the 1,000
    const again = await t.db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM}`, [16, '{}', 64, '{}', 64, 60_000]);
    expect(Math.max(...notificationReads(again.rows[0]['QUERY PLAN']))).toBeLessThanOrEqual(3 * 64);
    expect(Number((await t.db.knex('notifications').whereNotNull('locked_until').count({ n: '*' }))[0].n)).toBe(65);
  });
});

describe('recording a burst of attempts', () => {
  it('reads the notifications it records through their key, not the backlog, in the generic plan', { timeout: 60_000 }, async () => {
    await backlog(5000);
    const claimed = await t.repos.notifications.claim(20, 60_000);
    expect(claimed).toHaveLength(20);
    const at = new Date().toISOString();
    const items = claimed.map((n) => ({
      id: n.id, prev: n.attempts, state: 'complete', response_code: 204, response: '',
      notified_at: at, responded_at: at, retry_ms: null, payload_at: 0, payload_bytes: 2,
    }));
    // what a prepared statement runs: the generic plan, which cannot know how many attempts the recordset holds
    const plan = await t.db.knex.transaction(async (trx) => {
      await trx.raw('SET LOCAL plan_cache_mode = force_generic_plan');
      await trx.raw(`PREPARE record_probe(json, bytea, int, bigint) AS ${RECORD_ATTEMPTS.replace('?::json', '$1::json').replace('?::bytea', '$2::bytea')
        .replace('?::int', '$3::int').replace('?::bigint', '$4::bigint')}`);
      const literal = `'${JSON.stringify(items).replace(/'/g, "''")}'`;
      const { rows } = await trx.raw(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE record_probe(${literal}, convert_to('{}', 'UTF8'), 0, 0)`);
      await trx.raw('DEALLOCATE record_probe');
      return rows[0]['QUERY PLAN'];
    });
    const reads = notificationReads(plan);
    expect(reads.length).toBeGreaterThan(0);
    // the 20 recorded rows (a bitmap scan may read each id's index entries twice), never the 5,000
    expect(Math.max(...reads)).toBeLessThanOrEqual(40);
    // and it recorded them
    const ids = claimed.map((n) => n.id);
    const done = await t.db.knex('notifications').whereIn('id', ids).where({ state: 'complete', payload: '{}' }).count({ n: '*' });
    expect(Number(done[0].n)).toBe(20);
    expect(Number((await t.db.knex('notification_attempts').whereIn('notification_id', ids).count({ n: '*' }))[0].n)).toBe(20);
  });
});

describe('the queue\'s pages (migration 020)', () => {
  /** The heap page each of the notifications is on. */
  const pages = async (ids: string[]) => {
    const { rows } = await t.db.knex.raw(`SELECT id, (ctid::text::point)[0]::int AS page FROM notifications WHERE id = ANY(?::uuid[])`, [ids]);
    return new Map((rows as { id: string; page: number }[]).map((r) => [r.id, r.page]));
  };

  it('leases a notification without moving it to another page (a HOT update: no new index entries)', { timeout: 60_000 }, async () => {
    await t.db.knex.raw('DELETE FROM notifications');
    await backlog(400);
    const ids = (await t.db.knex('notifications').select('id')).map((r: { id: string }) => r.id);
    expect(ids).toHaveLength(400);
    const before = await pages(ids);
    expect(await t.repos.notifications.claim(400, 60_000)).toHaveLength(400);
    const after = await pages(ids);
    // filled to the brim (fillfactor 100) the pages had no room: the rows' new versions went to other pages
    const moved = ids.filter((id) => before.get(id) !== after.get(id));
    expect(moved).toHaveLength(0);
  });

  it('stores the posted body compressed with lz4 where the server has it', { timeout: 60_000 }, async (ctx) => {
    const { rows: [{ lz4 }] } = await t.db.knex.raw(
      "SELECT 'lz4' = ANY (enumvals) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'");
    if (!lz4) return ctx.skip();
    await backlog(1);
    const [n] = await t.repos.notifications.claim(1, 60_000);
    const payload = JSON.stringify({ meta: 'x'.repeat(3000) });
    await t.repos.notifications.recordAttempts([{ id: n.id, previousAttempts: n.attempts, body: Buffer.from(payload), outcome: {
      state: 'complete', responseCode: 204, response: '', notifiedAt: new Date(), respondedAt: new Date(), retryInMs: null,
    } }]);
    const { rows } = await t.db.knex.raw('SELECT pg_column_compression(payload) AS method, payload FROM notifications WHERE id = ?', [n.id]);
    expect(rows[0]).toEqual({ method: 'lz4', payload });
  });
});
