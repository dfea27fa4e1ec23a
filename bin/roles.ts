// What each part of a split deployment announces to, and learns from, the others through the database:
// one public API URL for every link, the gateways' public MQTT URL for simulator runs.
import type { Knex } from 'knex';
import { ConfigError, settingLabel, type Config, type PartName } from '../lib/config.js';
import type { Logger } from '../lib/logger.js';
import { announceUrl, announcedUrl } from '../db/deployment-urls.js';
import { every } from '../lib/periodic.js';

export const runs = (config: Config, part: PartName) => config.only.includes(part);

/** ms between re-reads of the announced API URL by parts that do not serve the API. */
const FOLLOW_MS = 5_000;

/** The MQTT URL a gateway announces: --mqtt-public-url, else its own listener (every interface → IPv4 loopback). */
export function gatewayPublicMqttUrl(config: Config, own: string | null): string | null {
  if (config.mqttPublicUrl) {
    if (!/^(mqtts?|wss?):\/\/[^/]+/.test(config.mqttPublicUrl)) {
      throw new ConfigError([`${settingLabel('mqttPublicUrl')}: "${config.mqttPublicUrl}" is not an mqtt://, mqtts://, ws:// or wss:// URL`]);
    }
    return config.mqttPublicUrl;
  }
  return own?.replace('://localhost:', '://127.0.0.1:') ?? null;
}

/** Announces what this process serves: its public API URL (API part), its public MQTT URL (gateway). */
export async function announce(knex: Knex, urls: { api?: string; mqtt?: string | null }): Promise<void> {
  if (urls.api) await announceUrl(knex, 'api', urls.api);
  if (urls.mqtt) await announceUrl(knex, 'mqtt', urls.mqtt);
}

/**
 * A process without the API and without --public-url builds its links (rule events at ingest, webhook
 * payloads) on the API URL an API part announced, re-read every FOLLOW_MS: never on its own port.
 * Returns a stop function.
 */
export async function followApiUrl(knex: Knex, config: Config, log: Logger, everyMs = FOLLOW_MS): Promise<() => Promise<void>> {
  if (runs(config, 'api') || config.publicUrl) return async () => undefined;
  const read = async () => {
    try {
      const url = await announcedUrl(knex, 'api');
      if (url && url !== config.publicUrl) { config.publicUrl = url; log.info({ url }, 'links use the API URL announced by the API part'); }
    } catch (err) {
      log.warn({ err }, 'could not read the announced API URL');
    }
  };
  await read();
  if (!config.publicUrl) log.warn('no API part has announced its URL yet: links use this process until one does (or set --public-url)');
  const follow = every(everyMs, read);
  return () => follow.stop();
}
