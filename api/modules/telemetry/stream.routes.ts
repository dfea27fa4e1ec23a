import type { FastifyRequest } from 'fastify';
import type { App } from '../../context.js';
import '@fastify/websocket';
import type { WebSocket } from 'ws';
import { AppError } from '../../../lib/errors.js';
import { serviceName } from '../../../lib/services.js';
import type { StoredMessage } from '../../../lib/bus.js';
import { ErrorBody, errorResponses } from '../../schemas/common.js';
import { presentMessage } from './telemetry.presenters.js';
import { startStreamSession } from './stream.session.js';
import { createAccessWatcher } from '../../../db/access-watch.js';
import { endDbAcquireLimit } from '../../plugins/db-limit.js';

const PROTOCOL = [
  'WebSocket live stream of new telemetry messages; authenticate the upgrade request with',
  'the application credentials. Client frames: `{"type":"sub","subject":{"type":"device","id":"<deviceId>"}}` and',
  '`{"type":"unsub","subject":{…}}`. Server frames: `{"type":"sub","subject":{…},"payload":{"ack":true}}`, or',
  '`payload: {"ack":false,"error":{"statusCode":404,"error":"Not Found","message":"Not found"}}` for a device the',
  'application may not read (400 for a malformed subject); `{"type":"pub","subject":{…},"payload":<message>}`',
  'for each new message of a subscribed device; `{"type":"health","payload":{"timestamp","subscriptions"}}`',
  'periodically; `{"type":"error","payload":{statusCode,error,message}}` for a frame that is not JSON or of an',
  'unknown type (the connection stays open). When the application loses the device (authorization revoked,',
  'device deregistered or deleted) its subscription ends within a second with an unasked',
  '`{"type":"unsub","subject":{…},"payload":{"ack":true,"reason":"…"}}` and no message of it follows.',
  'A plain HTTP GET answers 426. An application holds at most DRIVEWIRE_STREAMS_PER_APPLICATION streams at once on one',
  'API process (default 32): one more upgrade is answered 429. A client that stops reading is closed with code 1013 and',
  'a reason once more than DRIVEWIRE_STREAM_MAX_BUFFERED_BYTES (default 1 MiB) are waiting to be sent to it.',
  'Browsers, which cannot set an Authorization header on a WebSocket, offer the credentials as subprotocols instead:',
  '`new WebSocket(url, ["drivewire.v1", "drivewire.basic.<base64url of appId:secret>"])` or',
  '`["drivewire.v1", "drivewire.bearer.<token>"]`; the server selects `drivewire.v1` and never echoes the credential.',
  'The Authorization header wins when both are given.',
].join(' ');

/** The live message stream: `GET /api/v1/messages` upgraded to a WebSocket. */
export default async function streamRoutes(app: App) {
  const { repos, config, live, db } = app.deps;
  // One watcher per API: every stream's subscriptions are re-checked in one statement per tick.
  const access = createAccessWatcher(db.knex, undefined, (err) => app.log.error({ err }, 'stream access check failed'));
  app.addHook('onClose', async () => access.close());
  // @fastify/websocket is registered in api/app.ts: the auth hook of the /api/v1 scope runs on the
  // upgrade request, so a bad credential is answered 401 before any upgrade.

  /** The upgrade is the stream's one transaction; it is hijacked, so the onSend log never sees it. */
  const recordConnection = (request: FastifyRequest) => repos.transactions.record({
    applicationId: request.principal!.id, timestamp: new Date(), path: request.url, statusCode: 101,
    method: request.method, service: serviceName(config.servicePrefix, 'telemetry'),
  }).catch((err) => request.log.error({ err }, 'recording the stream transaction failed'));

  /**
   * Live streams open per application on this process. A place is taken before the upgrade and given back when the
   * connection's socket closes, whether the upgrade happened or not.
   */
  const streams = new Map<string, number>();
  const takePlace = (request: FastifyRequest) => {
    const id = request.principal!.id;
    const n = streams.get(id) ?? 0;
    if (n >= config.streamsPerApplication) {
      throw new AppError(429, `At most ${config.streamsPerApplication} live streams per application at once: close one first`);
    }
    streams.set(id, n + 1);
    request.raw.socket.once('close', () => {
      const left = (streams.get(id) ?? 1) - 1;
      if (left > 0) streams.set(id, left); else streams.delete(id);
    });
  };

  app.route({
    method: 'GET',
    url: '/api/v1/messages',
    config: { service: 'telemetry', credentialsInProtocol: true },
    schema: {
      tags: ['telemetry'], summary: 'Live stream of new messages (WebSocket)', description: PROTOCOL,
      response: { 426: ErrorBody, 429: ErrorBody, ...errorResponses() },
    },
    // Only an upgrade takes a place; a plain GET is answered 426 by the handler.
    preHandler: async (request) => { if (request.ws) takePlace(request); },
    handler: async (_request, reply) => {
      reply.header('upgrade', 'websocket');
      throw new AppError(426, 'This is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket)');
    },
    wsHandler: (socket: WebSocket, request: FastifyRequest) => {
      endDbAcquireLimit(request); // the upgrade is answered: the stream's work is not the request's
      const principal = request.principal!;
      void recordConnection(request);
      startStreamSession(socket, {
        canRead: (deviceId) => repos.devices.canRead(principal, deviceId),
        watchAccess: (deviceId, lost) => access.watch(principal, deviceId, lost),
        onMessage: live?.onMessage,
        present: (m) => presentMessage(app.links, m as StoredMessage),
        healthMs: config.streamHealthMs,
        maxBufferedBytes: config.streamMaxBufferedBytes,
        log: request.log,
      });
    },
  });
}
