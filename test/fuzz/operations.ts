/** The operations of the served OpenAPI document, in the shape the fuzzer needs. */

export type JsonSchema = {
  type?: string; properties?: Record<string, JsonSchema>; required?: string[]; items?: JsonSchema;
  additionalProperties?: boolean | JsonSchema; anyOf?: JsonSchema[]; enum?: unknown[]; nullable?: boolean;
  format?: string; minLength?: number; maxLength?: number; minimum?: number; exclusiveMinimum?: number;
  maximum?: number; maxItems?: number; minItems?: number; description?: string;
};

export interface Param { name: string; required: boolean; schema: JsonSchema }

export interface Operation {
  /** `GET /api/v1/devices/{deviceId}`: the key of the operation in reports and the corpus. */
  key: string;
  method: string;
  path: string;
  pathParams: Param[];
  queryParams: Param[];
  body: JsonSchema | null;
  /** Statuses the document lists for the operation. */
  statuses: string[];
  /** The documented error body (the same schema on every 4xx of the document). */
  errorSchema: JsonSchema | null;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/**
 * Every operation, in an order that keeps the world usable for as long as possible: reads first, then
 * writes, then deletions of children before their parents (a deleted device would turn every later
 * request about it into a 404), and the admin revocation of the main application's access last.
 */
export function operations(doc: any): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params: any[] = op.parameters ?? [];
      const pick = (where: string) => params.filter((p) => p.in === where)
        .map((p) => ({ name: p.name, required: Boolean(p.required), schema: p.schema ?? {} }));
      const errorStatus = Object.keys(op.responses ?? {}).find((s) => s.startsWith('4'));
      ops.push({
        key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path,
        pathParams: pick('path'), queryParams: pick('query'),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
        statuses: Object.keys(op.responses ?? {}),
        errorSchema: errorStatus ? op.responses[errorStatus].content?.['application/json']?.schema ?? null : null,
      });
    }
  }
  return ops.sort((a, b) => rank(a) - rank(b) || a.key.localeCompare(b.key));
}

function rank(op: Operation): number {
  if (op.method === 'GET') return 0;
  if (op.method !== 'DELETE') return 1;
  if (op.path.includes('authorizations')) return 5;
  if (op.path === '/api/v1/devices/{deviceId}') return 4;
  if (op.path === '/api/v1/dummies/{dummyId}') return 3;
  return 2;
}
