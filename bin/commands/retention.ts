import type { Command } from 'commander';
import { configOf, withSettings } from '../settings.js';

/** The settings `retention` commands read: the database and the retention of each kind of data. */
const RETENTION_SETTINGS = ['dataDir', 'databaseUrl', 'retentionDays', 'transactionRetentionDays', 'notificationRetentionDays',
  'deadLetterRetentionDays'] as const;

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const KINDS: Record<string, string> = { telemetry: 'telemetry', transactions: 'transaction log', notifications: 'notifications', deadLetters: 'dead letters' };

/** `drivewire retention …`: run an expiry pass now, see what each time-partitioned table keeps. */
export function registerRetentionCommands(program: Command): void {
  const retention = program.command('retention').description('retention of telemetry and logs (docs/operations/retention.md)');
  withSettings(retention.command('apply').description('run an expiry pass now: drop the partitions older than the retention, '
    + 'make those of the days ahead, and print what was dropped'), RETENTION_SETTINGS)
    .option('--dry-run', 'print what would be dropped, drop nothing')
    .option('--json', 'print the report as JSON')
    .action(async (o: { dryRun?: boolean; json?: boolean }, cmd: Command) => {
      const config = configOf(cmd);
      const { migrateLatest, openConfiguredDatabase } = await import('../../db/index.js');
      const { expire, storageOf } = await import('../../db/retention/expiry.js');
      const { describeExpiry, retentionDays } = await import('../../workers/retention/expiry.js');
      const db = await openConfiguredDatabase(config, (m) => process.stderr.write(`drivewire: ${m}\n`));
      try {
        await migrateLatest(db.knex);
        const days = retentionDays(config);
        const report = await expire(db.knex, days, { dryRun: o.dryRun });
        const storage = await storageOf(db.knex);
        if (o.json) {
          process.stdout.write(`${JSON.stringify({ retentionDays: days, ...report, storage }, null, 2)}\n`);
          return;
        }
        const kept = Object.entries(days).map(([kind, n]) => `${KINDS[kind]} ${n === null ? 'for ever' : `${n} days`}`).join(', ');
        process.stdout.write(`Retention: ${kept}\n${describeExpiry(report)}\n`);
        for (const t of storage) {
          process.stdout.write(`  ${t.table}: ${mb(t.bytes)} in ${t.partitions} partitions, `
            + `${t.retainedSince ? `rows since ${t.retainedSince.toISOString()}` : 'no rows'}\n`);
        }
      } finally {
        await db.close();
      }
    });
}
