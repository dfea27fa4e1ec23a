import { LRUCache } from 'lru-cache';
import type { Part, PartDeps } from '../../db/part.js';
import type { Config } from '../../lib/config.js';
import type { LinkBuilder } from '../../api/context.js';
import { deliver, webhookClient } from './deliver.js';
import { linksFromConfig, readyPayloads, type ReadyNotification } from './payload.js';
import { toHandedOver, type AttemptRecord, type ClaimedNotification, type PausePolicy } from '../../db/repositories/notifications.repository.js';
import type { StoredEvent } from '../../lib/bus.js';

/** Attempts recorded in one statement at most. */
const RECORD_BATCH = 500;
/**
 * Notifications held at once (calls in flight and finished calls whose attempt is not recorded yet), in slots: a
 * database slower than the receivers cannot pile up leased notifications without bound.
 */
const HELD_PER_SLOT = 4;
/** ms: a call without its answer by then marks its endpoint and application slow (held to their shares). */
const SLOW_CALL_MS = 1_000;

export interface NotificationWorkerOptions {
  /** How often the queue is polled for work from other processes and due retries (ms). */
  pollMs?: number;
  /** How long a claim lasts; a crashed worker's claims are due again after it (ms). */
  leaseMs?: number;
  /** How long close() waits for calls in flight before aborting them (ms). */
  closeTimeoutMs?: number;
}

/**
 * The notification delivery worker (docs/concepts/rules-events-webhooks.md). The notifications table is the queue: due
 * rows are leased with FOR UPDATE SKIP LOCKED (several workers can share it), up to config.webhookConcurrency calls run
 * at once, each finishing on its own, and at most config.webhookEndpointConcurrency of them to one endpoint (a
 * receiver's origin): a receiver that is slow or never answers holds that many slots for its timeout, never the others'
 * (the claim takes no more of an endpoint's notifications than it has room for, and one handed over past it goes back
 * to the queue); and at most config.webhookApplicationConcurrency to one application's subscriptions, whatever their
 * endpoints: a tenant's receivers on many origins (hostnames, ports) hold no more than that share either. The limit is
 * this worker's: with several workers, an endpoint has at most as many calls as their limits add up to (CLAIM).
 * Failures are retried after webhookBackoffMs × 2^(attempt−1), up to webhookMaxAttempts attempts; a subscription whose
 * attempts failed webhookPauseFailures times in a row over at least webhookPauseAfterMs is paused (RECORD_ATTEMPTS),
 * its notifications kept until it is resumed. Wakes on events stored in this process, polls for the rest. Notifications
 * the ingest of this process stored already leased to it (lib/bus.ts handOffLeaseMs) come with their events and are
 * delivered without a claim: the claim statement is only run when the queue may hold due rows.
 */
export async function startNotificationWorker(deps: PartDeps, opts: NotificationWorkerOptions = {}): Promise<Part> {
  const worker = new NotificationWorker(deps, opts);
  worker.start();
  return {
    name: 'notifications',
    close: () => worker.close(),
    health: async () => ({ notifications: !worker.closed }),
    metrics: async () => worker.metrics(),
  };
}

/** Delay before the attempt after `attempt` failed ones; null when no attempt is left. */
export function retryDelay(attempt: number, config: Pick<Config, 'webhookMaxAttempts' | 'webhookBackoffMs'>): number | null {
  return attempt >= config.webhookMaxAttempts ? null : config.webhookBackoffMs * 2 ** (attempt - 1);
}

class NotificationWorker {
  closed = false;
  private readonly config: Config;
  private readonly links: LinkBuilder;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  private readonly perApplication: number;
  private readonly pause: PausePolicy;
  /** Calls in flight per endpoint (ClaimedNotification.endpoint); an endpoint without calls has no entry. */
  private readonly endpointCalls = new Map<string, number>();
  /** Calls in flight per application (ClaimedNotification.applicationId); one without calls has no entry. */
  private readonly applicationCalls = new Map<string, number>();
  /**
   * Endpoints (`e:` + origin) and applications (`a:` + id) whose last call was answered within SLOW_CALL_MS: they may
   * use every free slot. Any other (new to this worker, or whose last call was slower or has no answer yet after
   * SLOW_CALL_MS) is held to its share. So a receiver that hangs never holds more than its share from its first call
   * on, while a healthy busy receiver is not throttled by a share it does not need: with one receiver at the shares,
   * 1,500 webhooks/s to one URL fell behind and its p99 grew to a minute (rules bench, 200 × 4 at 50 Hz).
   */
  private readonly fast = new LRUCache<string, true>({ max: 10_000, ttl: 60 * 60_000 });
  /** A finished call refills once a quarter of the slots are free (one claim per batch, not per call). */
  private readonly refillBelow: number;
  private readonly client: ReturnType<typeof webhookClient>;
  private readonly stopping = new AbortController();
  /** Every notification held: its call, then its attempt's record. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Calls in flight: the slots taken. A slot is free once its call has its answer, before the attempt is recorded. */
  private calls = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly counts = { complete: 0, error: 0, handedOver: 0, givenBack: 0, claims: 0 };
  private pumping: Promise<void> | null = null;
  /** Notifications handed over leased with their events, waiting for a slot, with when they arrived. */
  private handed: { n: ReadyNotification; at: number }[] = [];
  /** The queue may hold due rows this worker has not claimed: set by whatever may add them, cleared by a claim. */
  private dirty = true;
  /**
   * Endpoints (`e:`) and applications (`a:`) a launch (claimed or handed over) filled to their limit: the queue may
   * hold more of their due rows than was taken, so the first of their calls to answer makes it worth claiming again. Remembered by key, not
   * by comparing calls with the limit at the answer: a receiver that answers fast meanwhile has a higher limit then.
   */
  private readonly crowded = new Set<string>();
  private readonly recordQueue: { item: AttemptRecord; resolve(recorded: boolean): void; reject(err: unknown): void }[] = [];
  private recording: Promise<void> | null = null;
  private again = false;
  private poll?: NodeJS.Timeout;
  private off?: () => void;
  private offHandOff?: () => void;

  constructor(private readonly deps: PartDeps, private readonly opts: NotificationWorkerOptions) {
    this.config = deps.config;
    this.links = linksFromConfig(deps.config);
    this.leaseMs = opts.leaseMs ?? 2 * this.config.webhookTimeoutMs + 5_000;
    // validated by loadConfig (lib/config.ts): each share at least 1 and at most the slots
    this.concurrency = this.config.webhookConcurrency;
    this.perEndpoint = this.config.webhookEndpointConcurrency;
    this.perApplication = this.config.webhookApplicationConcurrency;
    this.pause = { failures: this.config.webhookPauseFailures, afterMs: this.config.webhookPauseAfterMs };
    this.client = webhookClient({ timeoutMs: this.config.webhookTimeoutMs, allowPrivate: this.config.allowPrivateWebhooks });
    this.refillBelow = this.concurrency - Math.max(1, Math.floor(this.concurrency / 4));
  }

  start(): void {
    this.poll = setInterval(() => this.wake(), this.opts.pollMs ?? 1_000);
    this.poll.unref();
    this.off = this.deps.bus.onEvents((events) => this.received(events));
    this.offHandOff = this.deps.bus.acceptHandOff(this.leaseMs);
    this.wake(); // restart safety: queued rows and expired leases are due now
  }

  /**
   * Events stored in this process: their leased notifications are this worker's to deliver; the notifications of the
   * others (stored unleased) are in the queue.
   */
  private received(events: StoredEvent[]): void {
    const leased = events.flatMap((e) => e.leased ?? []);
    if (leased.length) this.adopt(leased.map(toHandedOver));
    this.wake(events.some((e) => !e.leased));
  }

  /**
   * Takes notifications leased to this worker at insert. Beyond what it may hold, and all of them once closed, they
   * are given back to the queue (unleased, due), for a claim here or elsewhere.
   */
  private adopt(claimed: ClaimedNotification[]): void {
    let ready: ReadyNotification[] = [];
    try {
      ready = readyPayloads(this.links, claimed);
    } catch (err) {
      this.deps.log.error({ err }, 'notification worker could not build the payloads of handed-over notifications');
    }
    const room = this.closed ? 0 : Math.max(0, HELD_PER_SLOT * this.concurrency - this.inFlight.size - this.handed.length);
    const at = Date.now();
    const kept = new Set<string>();
    for (const n of ready.slice(0, room)) { this.handed.push({ n, at }); kept.add(n.id); }
    this.counts.handedOver += claimed.length;
    this.giveBack(claimed.filter((n) => !kept.has(n.id)).map((n) => n.id));
  }

  /** Releases leases this worker will not use; they are due for a claim at once. */
  private giveBack(ids: string[]): void {
    if (!ids.length) return;
    this.counts.givenBack += ids.length;
    this.deps.repos.notifications.release(ids)
      .catch((err) => this.deps.log.error({ err }, 'notification worker could not give back leased notifications (due when their lease expires)'))
      .finally(() => this.wake(true));
  }

  /** Launches handed-over work and claims queued work now (`claim`: the queue may hold new due rows), or right after the claim in progress. */
  private wake(claim = true): void {
    if (claim) this.dirty = true;
    if (this.closed) return;
    if (this.pumping) { this.again = true; return; }
    this.pumping = this.fill()
      .catch((err) => this.deps.log.error({ err }, 'notification worker could not claim work'))
      .finally(() => { this.pumping = null; if (this.again) this.wake(false); });
  }

  private wakeAfter(ms: number): void {
    const t = setTimeout(() => { this.timers.delete(t); this.wake(); }, ms);
    t.unref();
    this.timers.add(t);
  }

  /** Slots a call can start in: below the concurrency, and below what the worker may hold (calls and their records). */
  private freeSlots(): number {
    return Math.min(this.concurrency - this.calls, HELD_PER_SLOT * this.concurrency - this.inFlight.size);
  }

  /** Calls an endpoint may have in flight: every slot while its calls answer fast, else its share. */
  private endpointLimit(endpoint: string): number {
    return this.fast.has(`e:${endpoint}`) ? this.concurrency : this.perEndpoint;
  }

  private applicationLimit(applicationId: string): number {
    return this.fast.has(`a:${applicationId}`) ? this.concurrency : this.perApplication;
  }

  /** The notification's endpoint or application has all the calls it may have. */
  private full(n: ClaimedNotification): boolean {
    return (this.endpointCalls.get(n.endpoint) ?? 0) >= this.endpointLimit(n.endpoint)
      || (this.applicationCalls.get(n.applicationId) ?? 0) >= this.applicationLimit(n.applicationId);
  }

  /**
   * Calls in flight as the claim counts them against the shares: a fast endpoint's or application's as fewer by the
   * slots it may use beyond its share, so the claim gives it room up to every slot.
   */
  private claimCounts(calls: Map<string, number>, prefix: string, share: number): Record<string, number> {
    return Object.fromEntries([...calls].map(([k, c]) => [k, this.fast.has(prefix + k) ? c - (this.concurrency - share) : c]));
  }

  /**
   * Launches handed-over notifications, oldest first, into the free slots; one kept past half its lease is not launched
   * but returned as stale, to give back (a claim elsewhere could take it once the lease expires). One whose endpoint or
   * application has all the calls it may have waits here for one of them to answer, as it would in the queue, without
   * the round trips of giving it back and claiming it again (a busy receiver's every webhook would make both). The
   * slots left.
   */
  private launchHanded(): { free: number; stale: string[] } {
    let free = this.freeSlots();
    const stale: string[] = [];
    const now = Date.now();
    const waiting: { n: ReadyNotification; at: number }[] = [];
    for (const h of this.handed) {
      if (now - h.at > this.leaseMs / 2) stale.push(h.n.id);
      else if (free > 0 && !this.full(h.n)) { this.launch(h.n); free--; } else waiting.push(h);
    }
    this.handed = waiting;
    return { free, stale };
  }

  /** Fills the free slots: with handed-over notifications first (launchHanded), then with claimed due ones, until none are due or no slot is free. */
  private async fill(): Promise<void> {
    const { notifications } = this.deps.repos;
    do {
      this.again = false;
      if (this.freeSlots() <= 0 || this.closed) return;
      const { free, stale } = this.launchHanded();
      this.giveBack(stale);
      if (free <= 0 || !this.dirty) return;
      this.dirty = false;
      const { claimed, wanted } = await notifications.claimRound(free, this.leaseMs, {
        perEndpoint: this.perEndpoint, calls: this.claimCounts(this.endpointCalls, 'e:', this.perEndpoint),
        perApplication: this.perApplication, applicationCalls: this.claimCounts(this.applicationCalls, 'a:', this.perApplication),
      });
      this.counts.claims++;
      let ready: ReadyNotification[];
      try {
        ready = readyPayloads(this.links, claimed);
      } catch (err) {
        await notifications.release(claimed.map((n) => n.id));
        throw err;
      }
      if (this.closed) return notifications.release(ready.map((n) => n.id));
      // the claim gave each endpoint and application no more than its room: only a hand-over launched meanwhile could fill one first
      const over: string[] = [];
      for (const n of ready) {
        if (this.full(n)) over.push(n.id); else this.launch(n);
      }
      if (over.length) await notifications.release(over);
      // all it had room for, or fewer than were due (another worker's claim locked some, or some were held): claim again
      if (claimed.length === free || claimed.length < wanted) this.again = this.dirty = true;
    } while (this.again);
  }

  /** Remembers the notification's endpoint and application if its launch left them at their limit (crowded). */
  private markCrowded(n: ClaimedNotification): void {
    if ((this.endpointCalls.get(n.endpoint) ?? 0) >= this.endpointLimit(n.endpoint)) this.crowded.add(`e:${n.endpoint}`);
    if ((this.applicationCalls.get(n.applicationId) ?? 0) >= this.applicationLimit(n.applicationId)) this.crowded.add(`a:${n.applicationId}`);
  }

  private launch(n: ReadyNotification): void {
    this.calls++;
    const endpointCalls = (this.endpointCalls.get(n.endpoint) ?? 0) + 1;
    this.endpointCalls.set(n.endpoint, endpointCalls);
    this.applicationCalls.set(n.applicationId, (this.applicationCalls.get(n.applicationId) ?? 0) + 1);
    this.markCrowded(n);
    let answered = false;
    const started = Date.now();
    const slow = () => { this.fast.delete(`e:${n.endpoint}`); this.fast.delete(`a:${n.applicationId}`); };
    const slowAt = setTimeout(slow, SLOW_CALL_MS);
    slowAt.unref();
    // The slot goes back as soon as the call has its answer, not once its attempt is recorded: under load the
    // group-committed record statement and the claim after it take as long as the call, so slots held until then
    // deliver fewer webhooks a second than the rules make and the queue grows (docs/development/performance.md).
    const answer = () => {
      if (answered) return;
      answered = true;
      clearTimeout(slowAt);
      if (Date.now() - started < SLOW_CALL_MS) { this.fast.set(`e:${n.endpoint}`, true); this.fast.set(`a:${n.applicationId}`, true); } else slow();
      this.calls--;
      const left = (this.endpointCalls.get(n.endpoint) ?? 1) - 1;
      if (left > 0) this.endpointCalls.set(n.endpoint, left); else this.endpointCalls.delete(n.endpoint);
      const appLeft = (this.applicationCalls.get(n.applicationId) ?? 1) - 1;
      if (appLeft > 0) this.applicationCalls.set(n.applicationId, appLeft); else this.applicationCalls.delete(n.applicationId);
      // an endpoint or application that was full may have due notifications the last claim left for want of room
      const wasCrowded = this.crowded.delete(`e:${n.endpoint}`);
      if (this.crowded.delete(`a:${n.applicationId}`) || wasCrowded) this.dirty = true;
      if (this.calls <= this.refillBelow) this.wake(false);
    };
    const run = this.deliverOne(n, answer)
      .catch((err) => this.deps.log.error({ err, notificationId: n.id }, 'notification delivery could not be recorded'))
      .finally(() => {
        const wasFull = this.inFlight.size >= HELD_PER_SLOT * this.concurrency;
        this.inFlight.delete(n.id);
        answer();
        if (wasFull) this.wake(false);
      });
    this.inFlight.set(n.id, run);
  }

  private async deliverOne(n: ReadyNotification, answered: () => void): Promise<void> {
    const { notifications } = this.deps.repos;
    const result = await deliver(n, { client: this.client, signal: this.stopping.signal });
    answered();
    if (this.stopping.signal.aborted && result.responseCode === null) return notifications.release([n.id]);
    const ok = result.responseCode !== null && result.responseCode >= 200 && result.responseCode < 300;
    const retryInMs = ok ? null : retryDelay(n.attempts + 1, this.config);
    if (!(await this.record({
      id: n.id, previousAttempts: n.attempts, body: n.firstPayload ? n.body : null,
      outcome: { state: ok ? 'complete' : 'error', ...result, retryInMs },
    }))) return;
    this.counts[ok ? 'complete' : 'error']++;
    if (retryInMs !== null) this.wakeAfter(retryInMs);
  }

  /**
   * Records an attempt: outcomes that finish while a recording statement runs go together in the next one
   * (group commit: one statement per burst of deliveries, none added when idle). Whether it was recorded.
   */
  private record(item: AttemptRecord): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.recordQueue.push({ item, resolve, reject });
      this.flushRecords();
    });
  }

  private flushRecords(): void {
    if (this.recording || !this.recordQueue.length) return;
    const batch = this.recordQueue.splice(0, RECORD_BATCH);
    this.recording = this.recordBatch(batch).finally(() => { this.recording = null; this.flushRecords(); });
  }

  /**
   * One statement for the batch; if it fails, each attempt on its own, so that one that cannot be recorded does not
   * leave the others unrecorded (each then posted again once its lease expires).
   */
  private async recordBatch(batch: typeof this.recordQueue): Promise<void> {
    const { notifications } = this.deps.repos;
    try {
      const recorded = await notifications.recordAttempts(batch.map((b) => b.item), this.pause);
      batch.forEach((b) => b.resolve(recorded.has(b.item.id)));
      return;
    } catch (err) {
      if (batch.length === 1) return batch[0].reject(err);
      this.deps.log.warn({ err, attempts: batch.length }, 'notification worker could not record a batch of attempts; recording them one by one');
    }
    for (const b of batch) {
      await notifications.recordAttempts([b.item], this.pause).then((recorded) => b.resolve(recorded.has(b.item.id)), b.reject);
    }
  }

  /**
   * Stops claiming and taking hand-offs, delivers what was handed over before (as many as there are free slots; the rest
   * goes back to the queue), waits for calls in flight (bounded), then aborts the rest and gives them back. Until it
   * returns, notifications handed over by batches that were leased before are given back.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.offHandOff?.();
    clearInterval(this.poll);
    for (const t of this.timers) clearTimeout(t);
    await this.pumping;
    // Handed over while a claim was in progress, they waited for it, which returns at once when closed: launched here,
    // or the gateway's last batch (committed as it stops, just before this) was left in the queue undelivered.
    const { stale } = this.launchHanded();
    const back = [...stale, ...this.handed.splice(0).map((h) => h.n.id)];
    if (back.length) await this.deps.repos.notifications.release(back);
    const all = Promise.allSettled([...this.inFlight.values()]);
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<boolean>((r) => { timer = setTimeout(r, this.opts.closeTimeoutMs ?? this.config.webhookTimeoutMs + 1_000, false); });
    const finished = await Promise.race([all.then(() => true), bound]);
    clearTimeout(timer);
    if (!finished) { this.stopping.abort(); await all; }
    this.off?.();
    await this.client.close();
  }

  metrics(): string {
    return [
      '# TYPE drivewire_webhook_attempts_total counter',
      `drivewire_webhook_attempts_total{outcome="complete"} ${this.counts.complete}`,
      `drivewire_webhook_attempts_total{outcome="error"} ${this.counts.error}`,
      // notifications stored leased to this worker by its process, and those of them it gave back to the queue
      '# TYPE drivewire_webhook_handoffs_total counter',
      `drivewire_webhook_handoffs_total{outcome="received"} ${this.counts.handedOver}`,
      `drivewire_webhook_handoffs_total{outcome="given_back"} ${this.counts.givenBack}`,
      // claim statements run: each leases what is due, up to the free slots and rooms
      '# TYPE drivewire_webhook_claims_total counter',
      `drivewire_webhook_claims_total ${this.counts.claims}`,
      '# TYPE drivewire_webhook_in_flight gauge',
      `drivewire_webhook_in_flight ${this.calls}`,
      // endpoints with all the calls they may have (webhookEndpointConcurrency): slow or hanging receivers, held to their share
      '# TYPE drivewire_webhook_endpoints_full gauge',
      `drivewire_webhook_endpoints_full ${[...this.endpointCalls.values()].filter((n) => n >= this.perEndpoint).length}`,
      // applications with all the calls they may have (webhookApplicationConcurrency), whatever their endpoints
      '# TYPE drivewire_webhook_applications_full gauge',
      `drivewire_webhook_applications_full ${[...this.applicationCalls.values()].filter((n) => n >= this.perApplication).length}`,
    ].join('\n');
  }
}
