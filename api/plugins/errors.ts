import { STATUS_CODES } from 'node:http';
import type { FastifyError } from 'fastify';
import type { App } from '../context.js';
import { AppError } from '../../lib/errors.js';
import { PoolBusyError } from '../../db/acquire-limit.js';

export function errorBody(statusCode: number, message: string) {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message };
}

/**
 * One error handler: every 4xx/5xx answers `{statusCode, error, message}` (docs/reference/rest-api.md#errors); unexpected
 * errors are logged in full and answered 500 with a generic message, never a stack trace.
 */
export function registerErrorHandling(app: App): void {
  app.setErrorHandler((err: FastifyError | AppError | Error, request, reply) => {
    let status = 500;
    let message = 'Internal server error';
    if (err instanceof AppError) {
      status = err.statusCode; message = err.message;
    } else if ('validation' in err && err.validation) {
      status = 400; message = err.message;
    } else if ('statusCode' in err && typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      status = err.statusCode; message = friendly(err as FastifyError, request.routeOptions.bodyLimit ?? request.server.deps.config.httpBodyLimitBytes);
    } else if (busy(err)) {
      // Saturated pool or database refusing connections: a retryable 503, never a hang or a 500.
      status = 503; message = 'The database is busy: no connection came free in time; retry later';
      reply.header('retry-after', String(Math.max(1, Math.ceil(request.server.deps.config.dbAcquireTimeoutMs / 1000))));
      request.log.warn({ err: err.message }, 'request answered 503: database busy');
    } else if (badInputCode(err)) {
      // Last line of defence: input PostgreSQL cannot take that no check caught (the checks say which field).
      // knex prefixes the driver's message with the SQL text, which is not the caller's business.
      status = 400; message = `Invalid input: ${err.message.split(' - ').pop()}`;
      request.log.warn({ err }, 'input refused by the database');
    }
    if (status >= 500 && status !== 503) request.log.error({ err }, 'unexpected error');
    reply.code(status).type('application/json').send(errorBody(status, message));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, `Route ${request.method} ${request.url.split('?')[0]} not found`));
  });
}

const pgCode = (err: Error) => (err as { code?: unknown }).code;

/** Pool wait exceeded (ours or knex's own 60 s), too many clients, or a database not accepting connections yet. */
function busy(err: Error): boolean {
  return err instanceof PoolBusyError || err.name === 'KnexTimeoutError' || pgCode(err) === '53300' || pgCode(err) === '57P03';
}

/** invalid_text_representation (e.g. a malformed uuid), character_not_in_repertoire and untranslatable_character (NUL). */
function badInputCode(err: Error): boolean {
  return ['22P02', '22021', '22P05'].includes(String(pgCode(err)));
}

function friendly(err: FastifyError, limit: number): string {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'Unsupported Media Type: send the body as application/json';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'The body is empty but Content-Type is application/json';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `Request body is too large: the limit is ${limit} bytes`;
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return err.message;
    default:
      if (err instanceof SyntaxError) return `Malformed JSON body: ${err.message}`;
      return err.message;
  }
}
