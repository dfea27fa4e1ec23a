import { AppError, Conflict, NotFound, ValidationError } from '../../../lib/errors.js';
import { assertPublicHost, PrivateAddressError } from '../../../lib/net-guard.js';
import type { Principal, Repositories } from '../../../db/index.js';
import { SubscriptionCapReached, type EventObject, type Subscription } from '../../../db/repositories/subscriptions.repository.js';
import { isUuid } from '../../../lib/uuid.js';
import { OBJECT_TYPE_OF as STORED_OBJECT_TYPE_OF } from '../../../lib/event-types.js';

/** The object type each event type of a subscription carries (lib/event-types.ts); `rule-*` is subscription-only. */
const OBJECT_TYPE_OF: Record<string, string> = { ...STORED_OBJECT_TYPE_OF, 'rule-*': 'rule' };
export const EVENT_TYPES = Object.keys(OBJECT_TYPE_OF);
const MAX_URL = 2048;
/** appData is echoed in every notification body: bounded so one subscription cannot bloat every delivery. */
export const MAX_APP_DATA_BYTES = 16 * 1024;

function checkAppData(appData: string | null | undefined): void {
  const bytes = typeof appData === 'string' ? Buffer.byteLength(appData, 'utf8') : 0;
  if (bytes > MAX_APP_DATA_BYTES) {
    throw new AppError(413, `appData is too large: ${bytes} bytes; at most ${MAX_APP_DATA_BYTES} bytes (16 KB) are accepted`);
  }
}

interface Deps { repos: Repositories; allowPrivateWebhooks: boolean; maxSubscriptionsPerApplication: number }

/** A callback URL: absolute http(s), and (unless allowed by configuration) on a public address only. */
export async function checkCallbackUrl(url: string, allowPrivate: boolean): Promise<string> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError(`url must be an absolute http or https URL, got "${url}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ValidationError(`url must use http or https, got "${parsed.protocol.slice(0, -1)}"`);
  }
  if (url.length > MAX_URL) throw new ValidationError(`url must be at most ${MAX_URL} characters`);
  // A literal or a name resolving today to a non-public address is refused; a name that does not
  // resolve yet is accepted (its DNS may come later) and checked at every delivery.
  if (!allowPrivate) {
    try {
      await assertPublicHost(parsed.hostname);
    } catch (err) {
      if (!(err instanceof PrivateAddressError)) throw err;
      throw new ValidationError(`url is refused: ${err.message}; webhooks must reach public addresses`);
    }
  }
  return url;
}

async function checkObject(deps: Deps, app: Principal, deviceId: string, eventType: string, object?: EventObject) {
  const expected = OBJECT_TYPE_OF[eventType];
  if (!object) {
    if (expected === 'rule') throw new ValidationError(`object {type: "rule", id} is required for ${eventType} subscriptions`);
    return null;
  }
  if (object.type !== expected) {
    throw new ValidationError(`${eventType} events are about a ${expected}; object.type must be "${expected}", got "${object.type}"`);
  }
  if (expected === 'rule' && !(await deps.repos.subscriptions.ruleOfDevice(app.id, deviceId, object.id))) {
    throw new ValidationError(`object.id ${object.id} is not a rule of device ${deviceId} owned by this application`);
  }
  return { type: object.type, id: object.id };
}

export interface CreateInput { eventType: string; url: string; object?: EventObject; appData?: string | null }

export async function createSubscription(deps: Deps, app: Principal, deviceId: string, input: CreateInput) {
  await deps.repos.devices.requireReadable(app, deviceId);
  checkAppData(input.appData);
  if (!Object.hasOwn(OBJECT_TYPE_OF, input.eventType)) {
    throw new ValidationError(`eventType must be one of ${EVENT_TYPES.join(', ')}; got "${input.eventType}"`);
  }
  const object = await checkObject(deps, app, deviceId, input.eventType, input.object);
  const url = await checkCallbackUrl(input.url, deps.allowPrivateWebhooks);
  try {
    return await deps.repos.subscriptions.create(app, {
      deviceId, eventType: input.eventType, url, object, appData: input.appData ?? null,
    }, undefined, deps.maxSubscriptionsPerApplication);
  } catch (err) {
    if (!(err instanceof SubscriptionCapReached)) throw err;
    throw new Conflict(`An application may have at most ${deps.maxSubscriptionsPerApplication} subscriptions; delete one first`);
  }
}

export interface UpdateInput {
  url?: string; appData?: string | null; eventType?: string; object?: EventObject | null;
  /** A fetched subscription's delivery state; only `state` is read (the rest is the platform's). */
  delivery?: { state?: unknown };
}

/** `delivery.state` of a PUT: "paused" pauses, "active" resumes; absent leaves the state as it is. */
function pausedOf(delivery: UpdateInput['delivery']): boolean | undefined {
  const state = delivery?.state;
  if (state === undefined) return undefined;
  if (state !== 'active' && state !== 'paused') {
    throw new ValidationError(`delivery.state must be "active" or "paused", got ${JSON.stringify(state)}`);
  }
  return state === 'paused';
}

const sameObject = (a: EventObject | null | undefined, b: EventObject | null) =>
  (a ?? null) === null ? b === null : b !== null && a!.type === b.type && a!.id.toLowerCase() === b.id;

/** PUT: url and appData change; eventType and object are accepted only unchanged. */
export async function updateSubscription(deps: Deps, app: Principal, id: string, input: UpdateInput): Promise<Subscription> {
  const current = await deps.repos.subscriptions.get(app, id);
  if (!current) throw new NotFound();
  if (input.eventType !== undefined && input.eventType !== current.eventType) {
    throw new ValidationError('eventType cannot be changed; create a new subscription instead');
  }
  if (input.object !== undefined && !sameObject(input.object, current.object)) {
    throw new ValidationError('object cannot be changed; create a new subscription instead');
  }
  const paused = pausedOf(input.delivery);
  if (input.url === undefined && input.appData === undefined && paused === undefined) {
    throw new ValidationError('give url, appData and/or delivery.state to change');
  }
  checkAppData(input.appData);
  const url = input.url === undefined ? undefined : await checkCallbackUrl(input.url, deps.allowPrivateWebhooks);
  const updated = await deps.repos.subscriptions.update(app, id, { url, appData: input.appData, paused });
  if (!updated) throw new NotFound();
  return updated;
}

/** `objectId=` (empty, as the reference SDK sends it) reads as absent; anything else must be a UUID. */
export function parseFilter(q: { objectType?: string; objectId?: string }) {
  const objectType = q.objectType || undefined;
  const objectId = q.objectId || undefined;
  if (objectId !== undefined && !isUuid(objectId)) throw new ValidationError(`objectId must be a UUID, got "${objectId}"`);
  return { objectType, objectId: objectId?.toLowerCase() };
}
