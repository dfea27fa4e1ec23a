import { STATUS_CODES } from 'node:http';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Transform, type Readable } from 'node:stream';
import type { App } from '../context.js';
import type { Config } from '../../lib/config.js';
import { AppError } from '../../lib/errors.js';
import { errorBody } from './errors.js';

/**
 * Bounds on slow clients, so that a connection which dribbles its request in cannot hold a descriptor (and a
 * request's memory) for as long as it likes:
 * - the whole request (headers and body) must arrive within `httpRequestTimeoutMs`, its headers within
 *   `httpHeadersTimeoutMs` (Node's own timers, checked every second at most): past them, 408 and the socket closed;
 * - a body must keep an average of `httpBodyMinBytesPerSec` once `httpBodyGraceMs` has passed (as Kestrel's
 *   MinRequestBodyDataRate): below it, 408 with the error body and the socket closed;
 * - an answer sent before the request's body has arrived (a 401, a 404, a 413) closes the connection rather than
 *   waiting for the rest of the body;
 * - one client address holds at most `httpMaxConnectionsPerIp` connections: more are answered 503 and closed.
 * A request is complete once received: its handler's time, and a live stream once upgraded, are not bounded here.
 */
export function serverOptions(config: Config) {
  const checkEveryMs = Math.max(50, Math.min(1_000, Math.floor(config.httpHeadersTimeoutMs / 4)));
  return {
    requestTimeout: config.httpRequestTimeoutMs,
    http: {
      requestTimeout: config.httpRequestTimeoutMs,
      headersTimeout: config.httpHeadersTimeoutMs,
      connectionsCheckingInterval: checkEveryMs,
    },
    clientErrorHandler(this: App, err: NodeJS.ErrnoException, socket: Socket) {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const status = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
      const message = status === 408
        ? `The request did not arrive in time: its headers must arrive within ${config.httpHeadersTimeoutMs} ms and the whole request within ${config.httpRequestTimeoutMs} ms`
        : status === 431 ? 'Exceeded maximum allowed HTTP header size' : 'Client Error';
      this.log.debug({ err: err.message }, 'client error');
      // Never write into an answer already under way on this socket.
      const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      if (socket.writable && !inFlight?.headersSent) socket.write(rawAnswer(status, message));
      socket.destroy();
    },
  };
}

function rawAnswer(status: number, message: string): string {
  const body = JSON.stringify(errorBody(status, message));
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

const hasBody = (headers: Record<string, unknown>) =>
  headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');

export function registerSlowClientGuards(app: App): void {
  const { httpBodyMinBytesPerSec: rate, httpBodyGraceMs: graceMs, httpMaxConnectionsPerIp: perIp } = app.deps.config;

  if (rate > 0) {
    app.addHook('preParsing', async (request, reply, payload) => {
      if (request.raw.complete || !hasBody(request.headers)) return payload;
      const source = payload as Readable;
      const started = Date.now();
      let received = 0;
      let timer: NodeJS.Timeout | undefined;
      const counted = new Transform({ transform(chunk: Buffer, _enc, done) { received += chunk.length; done(null, chunk); } });
      counted.on('error', () => {}); // Fastify listens while it reads; after, an error has no one to tell
      counted.once('close', () => clearTimeout(timer));
      const check = () => {
        if (counted.destroyed || counted.writableEnded || reply.sent) return;
        const elapsed = Date.now() - started;
        // By `due` ms after the start, more than `received` bytes must have arrived to keep `rate`.
        const due = Math.max(graceMs, (received / rate) * 1000);
        if (elapsed < due) { timer = setTimeout(check, Math.ceil(due - elapsed)); return; }
        source.unpipe(counted);
        counted.destroy(new AppError(408, `The request body arrived too slowly: ${received} bytes in ${elapsed} ms, under the minimum of ${rate} bytes/s`));
      };
      timer = setTimeout(check, graceMs);
      source.once('error', (err) => counted.destroy(err));
      source.once('close', () => { if (!request.raw.complete) counted.destroy(); });
      source.pipe(counted);
      return counted;
    });
  }

  app.addHook('onSend', async (request, reply, payload) => {
    // Answered before the body arrived: reading the rest only to discard it would keep the socket for the client's pace.
    if (request.raw.complete === false && !reply.hasHeader('connection')) reply.header('connection', 'close');
    return payload;
  });

  if (perIp > 0) limitConnectionsPerAddress(app.server, perIp);
}

function limitConnectionsPerAddress(server: Server, max: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const n = (open.get(address) ?? 0) + 1;
    if (n > max) {
      socket.end(rawAnswer(503, `Too many connections from this address: at most ${max} at once`), () => socket.destroy());
      return;
    }
    open.set(address, n);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left); else open.delete(address);
    });
  });
}
