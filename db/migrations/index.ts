import type { Knex } from 'knex';
import * as m001 from './001_core.js';
import * as m003 from './003_rules.js';
import * as m004 from './004_subscriptions.js';
import * as m005 from './005_dummies.js';
import * as m006 from './006_trips.js';
import * as m007 from './007_distance.js';
import * as m008 from './008_diagnostics.js';
import * as m009 from './009_feed.js';
import * as m010 from './010_messages_indexes.js';
import * as m011 from './011_messages_order.js';
import * as m012 from './012_statistics.js';
import * as m013 from './013_message_counts.js';
import * as m014 from './014_history_keys.js';
import * as m015 from './015_notifications_due_order.js';
import * as m016 from './016_rule_states_on_change.js';
import * as m017 from './017_event_keys.js';
import * as m018 from './018_rule_log_key.js';
import * as m019 from './019_attempt_key.js';
import * as m020 from './020_notification_pages.js';
import * as m021 from './021_steps_on_messages.js';
import * as m022 from './022_messages_sample.js';
import * as m023 from './023_hot_tables_sample.js';
import * as m024 from './024_attempt_primary_key.js';
import * as m025 from './025_event_indexes.js';
import * as m026 from './026_feed_storage.js';
import * as m027 from './027_rule_event_meta.js';
import * as m028 from './028_vehicle_speed.js';
import * as m029 from './029_rule_boundaries_copy.js';
import * as m030 from './030_notification_subscription_key.js';
import * as m031 from './031_webhook_endpoints.js';
import * as m032 from './032_run_wait_reason.js';
import * as m033 from './033_notification_times_ms.js';
import * as m035 from './035_messages_compact.js';
import * as m036 from './036_time_partitions.js';
import * as m037 from './037_commands_presence.js';
import * as m038 from './038_rule_options.js';

export const MIGRATIONS: Record<string, Knex.Migration> = {
  '001_core': m001,
  '003_rules': m003,
  '004_subscriptions': m004,
  '005_dummies': m005,
  '006_trips': m006,
  '007_distance': m007,
  '008_diagnostics': m008,
  '009_feed': m009,
  '010_messages_indexes': m010,
  '011_messages_order': m011,
  '012_statistics': m012,
  '013_message_counts': m013,
  '014_history_keys': m014,
  '015_notifications_due_order': m015,
  '016_rule_states_on_change': m016,
  '017_event_keys': m017,
  '018_rule_log_key': m018,
  '019_attempt_key': m019,
  '020_notification_pages': m020,
  '021_steps_on_messages': m021,
  '022_messages_sample': m022,
  '023_hot_tables_sample': m023,
  '024_attempt_primary_key': m024,
  '025_event_indexes': m025,
  '026_feed_storage': m026,
  '027_rule_event_meta': m027,
  '028_vehicle_speed': m028,
  '029_rule_boundaries_copy': m029,
  '030_notification_subscription_key': m030,
  '031_webhook_endpoints': m031,
  '032_run_wait_reason': m032,
  '033_notification_times_ms': m033,
  '035_messages_compact': m035,
  '036_time_partitions': m036,
  '037_commands_presence': m037,
  '038_rule_options': m038,
};
