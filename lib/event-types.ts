import { ValidationError } from './errors.js';

/**
 * Every event the platform stores, with the type of object it names (docs/concepts/rules-events-webhooks.md).
 * Subscriptions, event-list filters and their messages read this one catalog.
 */
export const OBJECT_TYPE_OF: Readonly<Record<string, string>> = {
  startup: 'vehicle', shutdown: 'vehicle', 'phone-home': 'vehicle',
  'trip-started': 'trip', 'trip-stopped': 'trip', 'trip-completed': 'trip', 'trip-orphaned': 'trip',
  'dtc-on': 'vehicle', 'dtc-off': 'vehicle', collision: 'vehicle',
  'rule-enter': 'rule', 'rule-leave': 'rule',
  'distance-trigger': 'odometer-trigger',
  'device-online': 'device', 'device-offline': 'device',
  'command-succeeded': 'command', 'command-failed': 'command', 'command-expired': 'command',
};
export const STORED_EVENT_TYPES = Object.keys(OBJECT_TYPE_OF);
export const OBJECT_TYPES = [...new Set(Object.values(OBJECT_TYPE_OF))];

/**
 * An event list's `type` filter: an event type, `rule` (rule-enter and rule-leave), or `<prefix>-*` for a prefix some
 * type has. Anything else matches nothing ever, so it is refused rather than answered with an empty list.
 */
export function checkEventTypeFilter(type: string): void {
  if (type === 'rule' || STORED_EVENT_TYPES.includes(type)) return;
  if (type.endsWith('-*') && type.length > 2 && STORED_EVENT_TYPES.some((t) => t.startsWith(type.slice(0, -1)))) return;
  throw new ValidationError(
    `type must be an event type (${STORED_EVENT_TYPES.join(', ')}), rule, or a prefix with -* (e.g. trip-*); got "${type}"`);
}

/** An event list's `objectType` filter: one of the object types events name. */
export function checkObjectTypeFilter(objectType: string): void {
  if (!OBJECT_TYPES.includes(objectType)) {
    throw new ValidationError(`objectType must be one of ${OBJECT_TYPES.join(', ')}; got "${objectType}"`);
  }
}
