// The Aedes broker and its policy, only through Aedes' hooks: who connects (authenticate), what a device
// may publish (authorizePublish, which also ingests frames) and subscribe to (authorizeSubscribe).
import { Aedes, type AuthenticateError, type Client, type PublishPacket } from 'aedes';
import type { Logger } from '../lib/logger.js';
import { isUuid } from '../lib/uuid.js';
import type { Repositories } from '../db/index.js';
import type { IngestPipeline } from './ingest.pipeline.js';
import { reasonLabel, type GatewayMetrics } from './metrics.js';
import { clipTopic, maySubscribe, publishKind } from './topics.js';
import { uplinkJob } from './uplink.js';
import { createIgnoredFieldsTracker } from './ignored-fields.js';
import { qos2Receipts, type IncomingStore } from './qos2.js';
import type { CredentialsWatch } from './credentials-watch.js';
import type { LogThrottle } from './log-throttle.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRateLimiter, NotTaken, REFUSAL_LETTER_BYTES, REFUSAL_PAUSE_MS, type RateLimits, type RateReason, type Waiter } from './rate-limit.js';

export interface BrokerDeps {
  repos: Repositories;
  pipeline: IngestPipeline;
  metrics: GatewayMetrics;
  log: Logger;
  /** Refusals a client repeats are logged once per window, with their count. */
  throttle: LogThrottle;
  maxPayloadBytes: number;
  /** Longest topic a PUBLISH may have (bytes); topics are cut to it in logs and dead letters. */
  maxTopicBytes: number;
  /** ms a frame's ts may be ahead of the gateway's clock (default: the decoder's, 60 s). */
  maxFutureSkewMs?: number;
  /** ms a dummy's frame may be ahead (its runs stamp ahead of the wall clock; docs/concepts/simulator.md (Time)); default maxFutureSkewMs. */
  dummyMaxLeadMs?: number;
  /** A connection that sends no complete CONNECT within this time is closed (Aedes' connectTimeout). */
  connectTimeoutMs: number;
  /** Frames queued beyond which QoS 0 publishers also wait for their commit (backpressure). */
  highWater: number;
  /** Each device's rate limit on what it publishes (gateway/rate-limit.ts); omitted = none. */
  rateLimits?: RateLimits;
  /** Aedes' `mq` and `persistence` shared with other gateways (Redis); omitted = Aedes' in-memory defaults. */
  shared?: { mq: unknown; persistence: unknown };
  /** Closes a session whose device's credentials change; omitted = sessions last whatever happens to the secret. */
  credentials?: CredentialsWatch;
  /**
   * Takes a device's reply to a command (gateway/commands.ts): resolves null once stored, or with the reason it is
   * refused. Omitted: replies are refused, as any other topic.
   */
  replies?: (deviceId: string, payload: Buffer) => Promise<string | null>;
  /** A frames payload of the client's device arrived (its presence's last seen). */
  seen?: (client: Client) => void;
}

// CONNACK return codes (MQTT 3.1.1 §3.2.2.3).
const IDENTIFIER_REJECTED = 2;
const SERVER_UNAVAILABLE = 3;
const NOT_AUTHORIZED = 5;
const MESSAGES: Record<number, string> = {
  [IDENTIFIER_REJECTED]: 'identifier rejected', [SERVER_UNAVAILABLE]: 'server unavailable', [NOT_AUTHORIZED]: 'not authorized',
};

function authError(returnCode: number): AuthenticateError {
  return Object.assign(new Error(MESSAGES[returnCode]), { returnCode });
}

/** Characters of a client id or username a log line keeps (any length is allowed in MQTT 3.1.1). */
const ID_CHARS = 64;
/** Refusal reasons one 'frames refused' line quotes (with their count), and characters of each. */
const QUOTED_REFUSALS = 3;
const REFUSAL_CHARS = 200;

/** Aedes' error when no CONNECT arrived within connectTimeout (lib/client.js). */
const CONNECT_TIMEOUT = 'connect did not arrive in time';

/**
 * Who a CONNECT-time refusal is logged as: the remote address, not the username or client id a client chooses (one
 * rotating random usernames would get a line per CONNECT otherwise).
 */
const remoteOf = (client: Client) => (client.conn as { remoteAddress?: string }).remoteAddress ?? '';
/** A client whose connection closed (a payload of it waiting for its turn is not taken). */
const isGone = (client: Client) => (client as unknown as { closed?: boolean }).closed === true || client.conn.destroyed === true;
/** Each client as the rate limiter sees where a waiting payload comes from. */
const waiters = new WeakMap<Client, Waiter>();
const waiterOf = (client: Client): Waiter => {
  let w = waiters.get(client);
  if (!w) waiters.set(client, w = { gone: () => isGone(client) });
  return w;
};

export async function createBroker(d: BrokerDeps): Promise<Aedes> {
  const deviceOf = new WeakMap<Client, string>();
  /** Connected clients that are dummies: their frames may be stamped up to dummyMaxLeadMs ahead. */
  const dummies = new WeakSet<Client>();
  const ignoredFields = createIgnoredFieldsTracker(d.metrics, d.log);
  const refuseConnection = (reason: string, returnCode: number) => {
    d.metrics.connectionsRefused.inc({ reason });
    return authError(returnCode);
  };

  /**
   * username = device id, password = the secret issued at provisioning (stored hashed). The client id must
   * be the device id too: Aedes keys sessions by client id, so another id would let a
   * device take over, or disconnect, another's session and its queued commands. Checked here, before Aedes
   * registers the client (and so before any takeover).
   */
  const authenticate = (client: Client, username: string | undefined, password: Buffer | undefined,
    done: (err: AuthenticateError | null, ok: boolean | null) => void) => {
    // Not a UUID: no device can have that id, and the database must not see it.
    if (!isUuid(username) || !password) return done(refuseConnection('not_authorized', NOT_AUTHORIZED), null);
    d.repos.devices.credentials(username, password.toString('utf8')).then(async (hash) => {
      const dummy = hash !== null && await d.repos.dummies.isDevice(username);
      if (hash === null) {
        d.throttle.warn(remoteOf(client), 'not_authorized', { username, clientId: client.id.slice(0, ID_CHARS), remote: remoteOf(client) },
          'MQTT connection refused: wrong device id or secret');
        return done(refuseConnection('not_authorized', NOT_AUTHORIZED), null);
      }
      if (client.id.toLowerCase() !== username.toLowerCase()) {
        d.throttle.warn(remoteOf(client), 'client_id', { deviceId: username, clientId: client.id.slice(0, ID_CHARS), remote: remoteOf(client) },
          'MQTT connection refused: the client id must be the device id');
        return done(refuseConnection('client_id', IDENTIFIER_REJECTED), null);
      }
      deviceOf.set(client, username.toLowerCase());
      if (dummy) dummies.add(client);
      d.credentials?.authenticated(client, username, hash);
      done(null, true);
    }, (err) => {
      d.log.error({ err }, 'MQTT authentication failed: database unavailable');
      done(authError(SERVER_UNAVAILABLE), null);
    });
  };

  const limiter = createRateLimiter(d.rateLimits ?? { framesPerSecond: 0, framesBurst: 0, bytesPerSecond: 0, bytesBurst: 0 });

  /**
   * A frames payload over its device's rate limit: QoS 0 is refused before being decoded (counted; one dead letter
   * per device a minute keeps a sample) and the connection read no further until the device is within its limit (at
   * most REFUSAL_PAUSE_MS); QoS 1/2 is taken once within the limit (its PUBACK waits: MQTT 3.1.1 has no negative
   * PUBACK, and an acknowledged frame must be stored). A payload within the limits while others of the device wait
   * ('queued', a QoS 0 one too) waits its turn behind them: it is within the limit, and the device's order holds.
   * A waiting payload whose connection closes is not taken (unacknowledged, the device sends it again); one past the
   * device's waiting bytes closes its connection (refused, counted as rate_queue).
   */
  const ingest = (client: Client, deviceId: string, packet: PublishPacket): Promise<void> => {
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
    const over = limiter.over(deviceId);
    const skewMs = dummies.has(client) ? Math.max(d.dummyMaxLeadMs ?? 0, d.maxFutureSkewMs ?? 0) : d.maxFutureSkewMs;
    if (!over) return admit(deviceId, packet, payload, skewMs);
    if (packet.qos === 0 && over !== 'queued') return refuseOverRate(deviceId, packet.topic, payload, over);
    return limiter.wait(deviceId, payload.length, waiterOf(client), () => admit(deviceId, packet, payload, skewMs)).then(({ value, waitedMs }) => {
      d.metrics.delayed.inc({ reason: over });
      d.metrics.delaySeconds.inc(waitedMs / 1000);
      return value;
    }, (err: unknown) => {
      if (!(err instanceof NotTaken)) throw err;
      d.metrics.refused.inc({ reason: err.why });
      if (err.why === 'rate_queue') d.throttle.warn(deviceId, err.why, { deviceId, reason: err.why }, err.message);
      throw err;
    });
  };

  const refuseOverRate = (deviceId: string, topic: string, payload: Buffer, over: RateReason): Promise<void> => {
    d.metrics.payloads.inc();
    d.metrics.received.inc();
    d.metrics.refused.inc({ reason: over });
    const paused = sleep(Math.min(REFUSAL_PAUSE_MS, limiter.untilWithin(deviceId)), undefined, { ref: false });
    if (!limiter.keepLetter(deviceId)) return paused;
    const reason = limiter.reason(over);
    d.throttle.warn(deviceId, over, { deviceId, reason: over }, reason);
    const receivedAt = new Date();
    d.pipeline.submit({
      deviceId, topic, payload, frames: [], frameIndexes: [], receivedAt,
      deadLetters: [{ deviceId, topic, frameIndex: null, reason, raw: payload.subarray(0, REFUSAL_LETTER_BYTES), receivedAt }],
    }).catch((err) => d.log.error({ err, deviceId }, 'dead letter of a payload over its rate limit not kept'));
    return paused;
  };

  /** A frames payload settles when committed: the QoS 1 PUBACK goes out only then (Aedes acks after this hook). */
  const admit = (deviceId: string, packet: PublishPacket, payload: Buffer, maxFutureSkewMs: number | undefined): Promise<void> => {
    if (d.log.isLevelEnabled('trace')) d.log.trace({ deviceId, payload: payload.toString('hex') }, 'frames payload');
    const { job, received, refusals, ignoredFields: ignored } = uplinkJob(deviceId, packet.topic, payload, d.maxPayloadBytes, new Date(), maxFutureSkewMs);
    limiter.take(deviceId, received, payload.length);
    d.metrics.payloads.inc();
    d.metrics.received.inc(received);
    for (const reason of refusals) d.metrics.refused.inc({ reason: reasonLabel(reason) });
    if (refusals.length) {
      const reasons = refusals.slice(0, QUOTED_REFUSALS).map((r) => r.slice(0, REFUSAL_CHARS));
      d.throttle.info(deviceId, 'frames', { deviceId, refused: refusals.length, reasons }, 'frames refused');
    }
    ignoredFields.note(deviceId, ignored);
    const committed = d.pipeline.submit(job);
    if (packet.qos > 0 || d.pipeline.depth() > d.highWater) return committed;
    committed.catch((err) => d.log.error({ err, deviceId }, 'QoS 0 frames lost: the batch could not be committed'));
    return Promise.resolve();
  };

  /** Logs and counts a refused publish and keeps it as a dead letter; resolves once that is committed (or could not be). */
  const refusePublish = (client: Client | null, deviceId: string | undefined, packet: PublishPacket,
    label: string, why: string, reason: string): Promise<void> => {
    const topic = clipTopic(packet.topic, d.maxTopicBytes);
    d.throttle.warn(deviceId ?? client?.id.slice(0, ID_CHARS) ?? '', label, { deviceId, topic }, `publish refused: ${why}`);
    d.metrics.refused.inc({ reason: label });
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
    const receivedAt = new Date();
    return d.pipeline.submit({
      deviceId: deviceId ?? '', topic, payload, frames: [], frameIndexes: [], receivedAt,
      deadLetters: [{ deviceId: deviceId ?? null, topic, frameIndex: null, reason, raw: payload.subarray(0, d.maxPayloadBytes), receivedAt }],
    }).catch((err) => d.log.error({ err }, 'dead letter of a refused publish not kept'));
  };

  const authorizePublish = (client: Client | null, packet: PublishPacket, done: (err?: Error | null) => void) => {
    const deviceId = client ? deviceOf.get(client) : undefined;
    // MQTT 3.1.1 §3.3.5: no way to tell the client; closing the connection also keeps the packet from being routed.
    const topicBytes = Buffer.byteLength(packet.topic);
    if (topicBytes > d.maxTopicBytes) {
      const why = `topic of ${topicBytes} bytes exceeds the ${d.maxTopicBytes}-byte limit`;
      return void refusePublish(client, deviceId, packet, 'topic_length', why, `publish refused: ${why}`).then(() => done(new Error(why)));
    }
    const kind = deviceId ? publishKind(deviceId, packet.topic) : null;
    if (!deviceId || !kind || (kind === 'responses' && !d.replies)) {
      const why = 'a device publishes only to devices/<its id>/frames and devices/<its id>/responses';
      return void refusePublish(client, deviceId, packet, 'topic', why, `publish to ${packet.topic} refused: ${why}`)
        .then(() => done(new Error(`not authorized to publish to ${packet.topic}`)));
    }
    // Frames and replies are stored in the database, never kept in the broker nor routed (no one may subscribe to them).
    packet.retain = false;
    unrouted.add(packet);
    if (kind === 'responses') return void reply(client!, deviceId, packet).then(() => done(null), (err: Error) => done(err));
    d.seen?.(client!);
    const taking = packet.qos === 2 ? qos2.once(deviceId, client!, packet, () => ingest(client!, deviceId, packet)) : ingest(client!, deviceId, packet);
    taking.then(() => done(null), (err: Error) => done(err));
  };
  /**
   * A reply to a command: its PUBACK goes once it is stored. One that is refused (not a reply, or to no open command
   * of the device) is counted and kept as a dead letter with its reason, and acknowledged: the device would only
   * send it again. A database outage fails the publish (no PUBACK; the device sends it again).
   */
  const reply = async (client: Client, deviceId: string, packet: PublishPacket): Promise<void> => {
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
    if (payload.length > d.maxPayloadBytes) {
      const why = `payload of ${payload.length} bytes exceeds the ${d.maxPayloadBytes}-byte limit`;
      return refusePublish(client, deviceId, packet, 'reply', why, `reply refused: ${why}`);
    }
    // A reply counts as a frame in the device's rate limit: one that is over it waits its turn, as a frame would.
    const store = async () => {
      limiter.take(deviceId, 1, payload.length);
      const refused = await d.replies!(deviceId, payload);
      if (refused) await refusePublish(client, deviceId, packet, 'reply', refused, `reply refused: ${refused}`);
    };
    if (!limiter.over(deviceId)) return store();
    await limiter.wait(deviceId, payload.length, waiterOf(client), store).catch((err: unknown) => {
      if (!(err instanceof NotTaken)) throw err;
      d.metrics.refused.inc({ reason: err.why });
      throw err;
    });
  };
  /** Device PUBLISHes authorizePublish took: Aedes' publish (its routing, and with Redis the fan-out) skips them. */
  const unrouted = new WeakSet<PublishPacket>();

  const qos2 = qos2Receipts(() => (broker as unknown as { persistence: IncomingStore }).persistence);
  const broker = await Aedes.createBroker({
    ...d.shared,
    connectTimeout: d.connectTimeoutMs,
    authenticate,
    authorizePublish,
    authorizeSubscribe(client, sub, done) {
      // A SUBSCRIBE over --mqtt-max-subscribe-filters whose whole packet was in the chunk that cut the connection
      // (packet-guard.ts): Aedes still handles it; its filters are refused unlogged (the cut was).
      if (client.conn.destroyed) return done(null, null);
      const deviceId = deviceOf.get(client);
      if (deviceId && maySubscribe(deviceId, sub.topic)) return done(null, sub);
      d.throttle.warn(deviceId ?? client.id.slice(0, ID_CHARS), 'subscribe', { deviceId, topic: clipTopic(sub.topic, d.maxTopicBytes) },
        'subscription refused: a device subscribes only to devices/<its id>/commands');
      done(null, null); // SUBACK 0x80 for this topic; the connection stays up
    },
  });
  // Aedes routes a PUBLISH authorizePublish let through (also a QoS 0 one refused over its rate, which must not be
  // closed for it); the frames it took were stored, or refused, and go no further. Aedes has no hook for this.
  type Publish = (packet: PublishPacket, client?: unknown, done?: unknown) => void;
  const route = broker.publish.bind(broker) as unknown as Publish;
  (broker as unknown as { publish: Publish }).publish = (packet, client, done) => {
    if (!unrouted.has(packet)) return route(packet, client, done);
    const cb = typeof client === 'function' ? client : done;
    if (typeof cb === 'function') (cb as () => void)();
  };
  // PUBREL ends a QoS 2 exchange: its packet id may carry a new message (Aedes has no hook for PUBREL either).
  const persistence = (broker as unknown as { persistence: { incomingDelPacket(c: Client, p: { messageId?: number }): Promise<void> } }).persistence;
  const incomingDel = persistence.incomingDelPacket.bind(persistence);
  persistence.incomingDelPacket = (client, packet) => {
    qos2.released(client.id.toLowerCase(), packet.messageId);
    return incomingDel(client, packet);
  };
  d.credentials?.attach(broker);
  broker.on('clientError', (client, err) => d.log.debug({ err, clientId: client.id, deviceId: deviceOf.get(client) }, 'MQTT client error'));
  broker.on('connectionError', (client, err) => {
    if (err.message === CONNECT_TIMEOUT) d.metrics.connectionsRefused.inc({ reason: 'connect_timeout' });
    d.log.debug({ err, clientId: client.id }, 'MQTT connection error');
  });
  return broker;
}
