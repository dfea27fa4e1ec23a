/**
 * The platform's sub-services (names kept from the original platform's API: they appear in links and transactions),
 * with their link base config key and transaction kind.
 */
export const SERVICE_KINDS = [
  'platform', 'telemetry', 'event', 'rule', 'trip', 'distance', 'behavioral', 'diagnostic', 'safety', 'dummy',
] as const;
export type ServiceKind = (typeof SERVICE_KINDS)[number];

/** Transaction `service` names are `<prefix>-<kind>-service`. */
export function serviceName(prefix: string, kind: ServiceKind): string {
  return `${prefix}-${kind}-service`;
}
