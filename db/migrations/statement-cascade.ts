import type { Knex } from 'knex';

/**
 * A foreign key `child.column → parent(id) ON DELETE CASCADE` replaced by its delete action alone: no
 * check and key-share lock per inserted child row, and one DELETE of the children per statement that deletes parents
 * (an AFTER … FOR EACH STATEMENT trigger over the deleted rows), cascaded deletes of the parent included.
 */
export interface StatementCascade { parent: string; child: string; column: string; trigger: string }

export async function replaceKeyWithCascade(knex: Knex, c: StatementCascade): Promise<void> {
  await knex.raw(`ALTER TABLE ${c.child} DROP CONSTRAINT IF EXISTS ${c.child}_${c.column}_fkey`);
  await knex.raw(`CREATE OR REPLACE FUNCTION ${c.trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM ${c.child} c USING gone g WHERE c.${c.column} = g.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER ${c.trigger} AFTER DELETE ON ${c.parent}
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION ${c.trigger}()`);
}

export async function restoreKey(knex: Knex, c: StatementCascade): Promise<void> {
  await knex.raw(`DROP TRIGGER IF EXISTS ${c.trigger} ON ${c.parent}`);
  await knex.raw(`DROP FUNCTION IF EXISTS ${c.trigger}()`);
  await knex.raw(`ALTER TABLE ${c.child} ADD CONSTRAINT ${c.child}_${c.column}_fkey FOREIGN KEY (${c.column})
    REFERENCES ${c.parent}(id) ON DELETE CASCADE`);
}
