// The history scenario's day drop: the oldest day of messages dropped through the platform's partition manager
// (db/partitions.ts) while devices publish, timed, with the longest gap between consecutive acknowledgements the load
// saw meanwhile beside the longest in the same load before the drop started.
import type { Knex } from 'knex';
import { dropPartitionsBefore, listPartitions } from '../db/partitions.js';
import { MESSAGE_PARTITIONS } from '../db/retention/time-tables.js';
import { round, runLoad, spread, type LoadOptions } from './harness.js';

/**
 * The longest gap (ms) between consecutive acknowledgements (`acks`, epoch ms, in order) of which any part lies in
 * [from, to]; null with fewer than two acknowledgements around it.
 */
export function longestGap(acks: Float64Array, from: number, to: number): number | null {
  let longest: number | null = null;
  for (let i = 1; i < acks.length; i++) {
    if (acks[i] < from) continue;
    if (acks[i - 1] > to) break;
    longest = Math.max(longest ?? 0, acks[i] - acks[i - 1]);
  }
  return longest === null ? null : round(longest);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs the load; a quarter into its measured window, drops messages' oldest partition (`finishedInLoad`: whether the
 * drop ended before the measured window did, so that the gaps cover all of it).
 */
export async function dropOldestDayUnderLoad(knex: Knex, load: Omit<LoadOptions, 'ackTimes'>) {
  const [oldest] = await listPartitions(knex, MESSAGE_PARTITIONS);
  if (!oldest) return { dropped: null, reason: 'messages has no partition' };
  const started: { drop?: Promise<{ from: number; to: number; dropped: Awaited<ReturnType<typeof dropPartitionsBefore>> }> } = {};
  const result = await runLoad({ ...load, ackTimes: true }, undefined, () => {
    started.drop = (async () => {
      await sleep(load.durationMs / 4);
      const from = Date.now();
      const dropped = await dropPartitionsBefore(knex, MESSAGE_PARTITIONS, oldest.to);
      return { from, to: Date.now(), dropped };
    })();
    started.drop.catch(() => undefined); // awaited once the load is over: a failure is thrown there
  });
  if (!started.drop) throw new Error('the load never started its measured window');
  const drop = await started.drop;
  const [partition] = drop.dropped;
  return {
    dropped: partition ? { name: partition.name, rows: partition.rows, megabytes: round(partition.bytes / 2 ** 20) } : null,
    seconds: round((drop.to - drop.from) / 1000, 2),
    longestAckGapMs: {
      duringDrop: longestGap(result.ackTimes, drop.from, drop.to),
      // gaps that end before the drop starts: one across its start is the drop's
      beforeDrop: longestGap(result.ackTimes.filter((t) => t <= drop.from), result.windowEpochMs.from, drop.from),
    },
    finishedInLoad: drop.to <= result.windowEpochMs.to,
    framesStoredPerSecond: round(result.acked / (result.measuredMs / 1000), 0),
    publishToCommitMs: spread(result.latencies),
    framesAcknowledged: result.ackedTotal,
    publishErrors: result.errors,
  };
}
