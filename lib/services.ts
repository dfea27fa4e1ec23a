/** The sub-services of the spec (platform-api.md table), with their link base config key and transaction kind. */
export const SERVICE_KINDS = [
  'platform', 'telemetry', 'event', 'rule', 'trip', 'distance', 'behavioral', 'diagnostic', 'safety', 'dummy',
] as const;
export type ServiceKind = (typeof SERVICE_KINDS)[number];

/** Transaction `service` names are `<prefix>-<kind>-service` (spec 2.4). */
export function serviceName(prefix: string, kind: ServiceKind): string {
  return `${prefix}-${kind}-service`;
}
