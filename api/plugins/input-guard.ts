import type { App } from '../context.js';
import { ValidationError } from '../../lib/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../lib/json-bounds.js';

/**
 * Input bounds every route gets once, before any handler or the database sees the input
 * (docs/reference/limits.md): JSON bodies nest at most MAX_JSON_DEPTH levels; an empty body with
 * `Content-Type: application/json` is no body on GET/DELETE/HEAD/OPTIONS; and no query parameter,
 * path parameter or body string (value or key) holds a NUL character, which PostgreSQL text and
 * jsonb cannot store. Refusals are 400s naming the field.
 */
export function registerInputGuard(app: App): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // Many HTTP clients send the JSON content type on every call, body or not.
    if (body === '' && BODYLESS.has(request.method)) return done(null, undefined);
    parseJson(request, body as string, (err, value) => {
      if (err) return done(err, undefined);
      // Checked here, before anything walks the value recursively (schema validation, services, JSON.stringify).
      if (nestsDeeperThan(value)) return done(new ValidationError(`The body nests arrays/objects more than ${MAX_JSON_DEPTH} levels deep`), undefined);
      // JSON text cannot hold a raw NUL: one in the value came from the escape, so only such a body is walked.
      try {
        if ((body as string).includes('\\u0000')) refuseNul(value, '');
      } catch (nul) {
        return done(nul as Error, undefined);
      }
      done(null, value);
    });
  });
  // Query and path parameters are known at onRequest, before authentication reads the database.
  app.addHook('onRequest', async (request) => {
    refuseNul(request.params, 'path parameter ');
    refuseNul(request.query, 'query parameter ');
  });
}

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/** Throws a 400 naming the first string value or key under `root` that holds U+0000; walks without recursion. */
export function refuseNul(root: unknown, prefix: string): void {
  const stack: [unknown, string][] = [[root, '']];
  while (stack.length) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) throw nulError(prefix, path, 'must not contain');
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => stack.push([v, `${path}[${i}]`]));
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, v] of Object.entries(value)) {
        if (key.includes('\u0000')) throw nulError(prefix, path, 'must not have a key containing');
        stack.push([v, path ? `${path}.${key}` : key]);
      }
    }
  }
}

function nulError(prefix: string, path: string, what: string): ValidationError {
  const name = path ? `${prefix}${path}` : `${prefix || 'the body'}`.trim();
  return new ValidationError(`${name} ${what} a NUL character (\\u0000), which cannot be stored`);
}
