import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError } from '../../lib/errors.js';

export function errorBody(statusCode: number, message: string) {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message };
}

/**
 * One error handler: every 4xx/5xx answers `{statusCode, error, message}` (DESIGN.md); unexpected
 * errors are logged in full and answered 500 with a generic message, never a stack trace.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | AppError | Error, request, reply) => {
    let status = 500;
    let message = 'Internal server error';
    if (err instanceof AppError) {
      status = err.statusCode; message = err.message;
    } else if ('validation' in err && err.validation) {
      status = 400; message = err.message;
    } else if ('statusCode' in err && typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      status = err.statusCode; message = friendly(err as FastifyError);
    }
    if (status >= 500) request.log.error({ err }, 'unexpected error');
    reply.code(status).type('application/json').send(errorBody(status, message));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, `Route ${request.method} ${request.url.split('?')[0]} not found`));
  });
}

function friendly(err: FastifyError): string {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'Unsupported Media Type: send the body as application/json';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'The body is empty but Content-Type is application/json';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return err.message;
    default:
      if (err instanceof SyntaxError) return `Malformed JSON body: ${err.message}`;
      return err.message;
  }
}
