import type { Knex } from 'knex';
import * as m001 from './001_core.js';
import * as m003 from './003_rules.js';
import * as m004 from './004_subscriptions.js';
import * as m005 from './005_dummies.js';
import * as m008 from './008_diagnostics.js';

export const MIGRATIONS: Record<string, Knex.Migration> = {
  '001_core': m001,
  '003_rules': m003,
  '004_subscriptions': m004,
  '005_dummies': m005,
  '008_diagnostics': m008,
};
