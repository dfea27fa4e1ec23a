import type { PartitionedTable } from '../partitions.js';

/**
 * The append-only tables kept by time (migration 036): range partitions on the time each row is about, dropped whole
 * once older than their retention (db/retention/expiry.ts). A day of a large fleet's messages is one partition (1,000
 * vehicles every 5 s: 17 million rows); the logs are far smaller and go by month.
 */
export const MESSAGE_PARTITIONS: PartitionedTable = { table: 'messages', column: 'ts', span: 'day' };
export const TRANSACTION_PARTITIONS: PartitionedTable = { table: 'transactions', column: 'ts', span: 'month' };
export const DEAD_LETTER_PARTITIONS: PartitionedTable = { table: 'dead_letters', column: 'received_at', span: 'month' };
/** Notifications are updated in place as they are attempted: half of each page is left free for those updates (migration 020). */
export const NOTIFICATION_PARTITIONS: PartitionedTable = { table: 'notifications', column: 'created_at', span: 'month', storage: 'fillfactor = 50' };
export const ATTEMPT_PARTITIONS: PartitionedTable = { table: 'notification_attempts', column: 'notified_at', span: 'month' };

/** What each retention setting keeps: telemetry, the transaction log, webhook notifications, dead letters. */
export type RetentionKind = 'telemetry' | 'transactions' | 'notifications' | 'deadLetters';

export const RETAINED: Record<RetentionKind, readonly PartitionedTable[]> = {
  telemetry: [MESSAGE_PARTITIONS],
  transactions: [TRANSACTION_PARTITIONS],
  notifications: [NOTIFICATION_PARTITIONS, ATTEMPT_PARTITIONS],
  deadLetters: [DEAD_LETTER_PARTITIONS],
};

export const TIME_TABLES: readonly PartitionedTable[] = Object.values(RETAINED).flat();

/** Days of partitions made ahead of now (at start and by every expiry pass), so the hot path rarely makes one. */
export const AHEAD_DAYS = 3;
