import type { Knex } from 'knex';

/** Runs a script of statements one by one (PGlite's extended protocol takes one statement per call). */
export async function runStatements(knex: Knex, script: string): Promise<void> {
  const statements = script.split(/;\s*(?:\n|$)/).map((s) => s.trim()).filter(Boolean);
  for (const statement of statements) await knex.raw(statement);
}
