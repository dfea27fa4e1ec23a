import type { WebSocket, RawData } from 'ws';
import type { FastifyBaseLogger } from 'fastify';
import { errorBody } from '../../plugins/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../lib/json-bounds.js';
import type { LiveHooks } from '../../context.js';
import { isUuid } from '../../../lib/uuid.js';

/**
 * One live-stream connection. Client frames: `sub` / `unsub` with
 * `subject: {type:'device', id}`. Server frames: the `sub`/`unsub` answer with `payload.ack`
 * (`ack:false` carries `error: {statusCode, error, message}`), an unasked `unsub` with
 * `payload: {ack: true, reason}` when access to the device ends, `pub` with a message as the REST API
 * shows it, `health` every `healthMs`, and `error` for a frame that is not JSON or of an unknown type.
 * A bad frame never closes the connection.
 */
export interface StreamSessionDeps {
  canRead(deviceId: string): Promise<boolean>;
  /** Calls `lost` once the application can no longer read the device (revoked, deregistered, deleted). */
  watchAccess?(deviceId: string, lost: () => void): () => void;
  onMessage: LiveHooks['onMessage'];
  present(message: unknown): unknown;
  healthMs: number;
  /** Unsent bytes past which the client is too slow: the connection is closed (1013) rather than buffered without end. */
  maxBufferedBytes: number;
  log: FastifyBaseLogger;
}

interface Subject { type: 'device'; id: string }
type Frame = Record<string, unknown>;

/** Subscriptions one connection may hold: bounds the listeners a single client can create. */
export const MAX_SUBSCRIPTIONS = 100;

function parseFrame(raw: RawData): Frame | string {
  let frame: unknown;
  try { frame = JSON.parse(raw.toString()); } catch (err) { return `Malformed JSON frame: ${(err as Error).message}`; }
  // Before anything prints or walks it: a deep value overflows JSON.stringify's stack.
  if (nestsDeeperThan(frame)) return `A frame must not nest arrays/objects more than ${MAX_JSON_DEPTH} levels deep`;
  if (!frame || typeof frame !== 'object' || Array.isArray(frame) || typeof (frame as Frame).type !== 'string') {
    return 'A frame must be a JSON object with a "type" (sub or unsub)';
  }
  return frame as Frame;
}

function parseSubject(value: unknown): Subject | string {
  const s = value as Record<string, unknown> | null;
  if (!s || typeof s !== 'object') return 'subject is required: {"type":"device","id":"<deviceId>"}';
  if (s.type !== 'device') return `subject.type must be "device", got ${JSON.stringify(s.type ?? null)}`;
  if (typeof s.id !== 'string' || !isUuid(s.id)) return 'subject.id must be a device id (UUID)';
  return { type: 'device', id: s.id.toLowerCase() };
}

export function startStreamSession(socket: WebSocket, deps: StreamSessionDeps): void {
  const subs = new Map<string, () => void>();
  let closed = false;
  let queue = Promise.resolve();

  const send = (frame: Frame) => {
    if (closed || socket.readyState !== socket.OPEN) return;
    if (socket.bufferedAmount > deps.maxBufferedBytes) return tooSlow();
    socket.send(JSON.stringify(frame));
  };
  /**
   * The client has not read what was sent: its subscriptions end now, so nothing more is queued for it, and the close
   * frame follows what is already on its way (ws destroys the socket if the client never reads it).
   */
  const tooSlow = () => {
    end();
    deps.log.info({ bufferedBytes: socket.bufferedAmount }, 'live stream closed: client too slow');
    socket.close(1013, `Client too slow: over ${deps.maxBufferedBytes} bytes unsent; reconnect and read faster`);
  };
  const refuse = (type: string, subject: unknown, statusCode: number, message: string) =>
    send({ type, subject, payload: { ack: false, error: errorBody(statusCode, message) } });

  async function subscribe(subject: Subject): Promise<void> {
    if (subs.has(subject.id)) return send({ type: 'sub', subject, payload: { ack: true } });
    if (!deps.onMessage) return refuse('sub', subject, 503, 'The live stream is not available on this server');
    if (subs.size >= MAX_SUBSCRIPTIONS) {
      return refuse('sub', subject, 400, `At most ${MAX_SUBSCRIPTIONS} subscriptions per connection`);
    }
    if (!(await deps.canRead(subject.id))) return refuse('sub', subject, 404, 'Not found');
    if (closed || subs.has(subject.id)) return;
    send({ type: 'sub', subject, payload: { ack: true } });
    const offMessages = deps.onMessage(subject.id, (m) => { if (subs.has(subject.id)) send({ type: 'pub', subject, payload: deps.present(m) }); });
    const offAccess = deps.watchAccess?.(subject.id, () => revoked(subject));
    subs.set(subject.id, () => { offMessages(); offAccess?.(); });
  }

  /** Access ended: the subscription ends at once and says why; the connection stays open. */
  function revoked(subject: Subject): void {
    if (!subs.has(subject.id)) return;
    subs.get(subject.id)!();
    subs.delete(subject.id);
    send({ type: 'unsub', subject, payload: { ack: true, reason: `Access to device ${subject.id} has ended (authorization revoked, device deregistered or deleted): no further messages are sent` } });
  }

  function unsubscribe(subject: Subject): void {
    subs.get(subject.id)?.();
    subs.delete(subject.id);
    send({ type: 'unsub', subject, payload: { ack: true } });
  }

  async function handle(raw: RawData): Promise<void> {
    const frame = parseFrame(raw);
    if (typeof frame === 'string') return send({ type: 'error', payload: errorBody(400, frame) });
    if (frame.type !== 'sub' && frame.type !== 'unsub') {
      return send({ type: 'error', payload: errorBody(400, `Unknown frame type "${frame.type}": expected sub or unsub`) });
    }
    const subject = parseSubject(frame.subject);
    if (typeof subject === 'string') return refuse(frame.type, frame.subject ?? null, 400, subject);
    return frame.type === 'sub' ? subscribe(subject) : unsubscribe(subject);
  }

  // healthMs 0 turns the heartbeat off.
  const health = deps.healthMs > 0 ? setInterval(() => send({
    type: 'health', payload: { timestamp: new Date().toISOString(), subscriptions: subs.size },
  }), deps.healthMs) : undefined;

  // Frames are handled one after the other, so answers come in the order the client asked.
  socket.on('message', (raw) => {
    queue = queue.then(() => handle(raw)).catch((err) => {
      deps.log.error({ err }, 'stream frame failed');
      send({ type: 'error', payload: errorBody(500, 'Internal server error') });
    });
  });
  function end(): void {
    closed = true;
    clearInterval(health);
    for (const off of subs.values()) off();
    subs.clear();
  }
  socket.on('close', end);
}
