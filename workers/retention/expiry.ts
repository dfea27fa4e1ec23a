import type { Part, PartDeps } from '../../db/part.js';
import { expire, storageMetrics, storageOf, type ExpiryReport, type RetentionDays } from '../../db/retention/expiry.js';
import type { Config } from '../../lib/config.js';
import { every } from '../../lib/periodic.js';

/** How often the workers run an expiry pass (besides the one at start). */
export const EXPIRY_EVERY_MS = 3_600_000;
/** /metrics reads the tables' sizes at most this often: each read lists every partition. */
const STORAGE_CACHE_MS = 60_000;

/** The retention settings, by kind (db/retention/time-tables.ts RETAINED). */
export const retentionDays = (config: Config): RetentionDays => ({
  telemetry: config.retentionDays,
  transactions: config.transactionRetentionDays,
  notifications: config.notificationRetentionDays,
  deadLetters: config.deadLetterRetentionDays,
});

/** One line for the log or the CLI: what a pass dropped. */
export function describeExpiry(report: ExpiryReport): string {
  if (!report.dropped.length) return report.dryRun ? 'nothing would be dropped' : 'nothing expired';
  const mb = (b: number) => (b / 2 ** 20).toFixed(1);
  return report.dropped.map((d) => `${report.dryRun ? 'would drop' : 'dropped'} ${d.name} (${d.table} from ${d.from.toISOString()} to `
    + `${d.to.toISOString()}: ${d.rows} rows, ${mb(d.bytes)} MB)`).join('\n');
}

/**
 * The expiry pass of the workers (docs/operations/retention.md): at start (in the background: a drop on PostgreSQL
 * waits for the transactions that may still read the partition) and every EXPIRY_EVERY_MS. It also makes the
 * partitions of the days ahead, so that ingest rarely makes one. Several worker processes may run it at once: each
 * partition is made and dropped once (db/partitions.ts). Its metrics: the time-partitioned tables' bytes, partitions
 * and oldest retained time, and the partitions it dropped.
 */
export async function startRetention(deps: PartDeps): Promise<Part> {
  const { config, db, log } = deps;
  let droppedTotal = 0;
  const pass = async () => {
    try {
      const report = await expire(db.knex, retentionDays(config));
      droppedTotal += report.dropped.length;
      if (report.dropped.length) log.info({ dropped: report.dropped.map((d) => d.name) }, describeExpiry(report));
    } catch (err) {
      log.error({ err }, 'expiry pass failed');
    }
  };
  let first: Promise<void> | null = pass();
  const hourly = every(EXPIRY_EVERY_MS, pass);
  let storage: { at: number; text: Promise<string> } | null = null;
  return {
    name: 'retention',
    async metrics() {
      if (!storage || Date.now() - storage.at > STORAGE_CACHE_MS) {
        storage = { at: Date.now(), text: storageOf(db.knex).then(storageMetrics).catch(() => '') };
      }
      return `${await storage.text}# HELP drivewire_retention_dropped_partitions_total Partitions dropped by expiry passes of this process.
# TYPE drivewire_retention_dropped_partitions_total counter
drivewire_retention_dropped_partitions_total ${droppedTotal}\n`;
    },
    async close() {
      await hourly.stop();
      await first;
      first = null;
    },
  };
}
