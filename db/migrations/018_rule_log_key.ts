import type { Knex } from 'knex';

/**
 * The rule state log no longer checks its rule per inserted row (issue 13, as 017 did for events): under the rules
 * bench `rule_state_log_rule_id_fkey` took 8–10 µs per logged change point (auto_explain, log_triggers). The check
 * guarded nothing the batch had not already: the ingest batch key-share locks its rules before evaluating them
 * (db/rules/evaluate.ts BATCH_RULES), so a rule cannot be deleted between its evaluation and the batch's commit.
 * What the key did on delete is kept, set-based: deleting rules (through the API, or with their device) deletes
 * their log in one statement per DELETE.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rule_state_log DROP CONSTRAINT IF EXISTS rule_state_log_rule_id_fkey');
  await knex.raw(`CREATE OR REPLACE FUNCTION rules_delete_state_log() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM rule_state_log l USING gone g WHERE l.rule_id = g.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER rules_delete_state_log AFTER DELETE ON rules
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION rules_delete_state_log()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS rules_delete_state_log ON rules');
  await knex.raw('DROP FUNCTION IF EXISTS rules_delete_state_log()');
  await knex.raw(`ALTER TABLE rule_state_log ADD CONSTRAINT rule_state_log_rule_id_fkey FOREIGN KEY (rule_id)
    REFERENCES rules(id) ON DELETE CASCADE`);
}
