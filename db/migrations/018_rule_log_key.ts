import type { Knex } from 'knex';
import { replaceKeyWithCascade, restoreKey, type StatementCascade } from './statement-cascade.js';

/**
 * The rule state log no longer checks its rule per inserted row (as 017 did for events): the check of
 * `rule_state_log_rule_id_fkey` ran for every logged change point. It
 * guarded nothing the batch had not already: the ingest batch key-share locks the rules it writes for (db/rules/
 * evaluate.sql.ts `locked`), so a rule cannot be deleted between its evaluation and the batch's commit.
 * What the key did on delete is kept, set-based: deleting rules (through the API, or with their device) deletes
 * their log in one statement per DELETE.
 */
const LOG: StatementCascade = { parent: 'rules', child: 'rule_state_log', column: 'rule_id', trigger: 'rules_delete_state_log' };

export async function up(knex: Knex): Promise<void> {
  await replaceKeyWithCascade(knex, LOG);
}

export async function down(knex: Knex): Promise<void> {
  await restoreKey(knex, LOG);
}
