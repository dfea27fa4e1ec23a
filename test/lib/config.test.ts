import path from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ConfigError, configDefault, loadConfig, type Config, type PartName, type SettingKey } from '../../lib/config.js';
import type { ServiceKind } from '../../lib/services.js';
import { parseTimeParam } from '../../lib/time.js';

describe('config', () => {
  it('takes flags over environment over defaults', () => {
    const c = loadConfig({ httpPort: '4000' }, { DRIVEWIRE_HTTP_PORT: '5000', DRIVEWIRE_MQTT_PORT: '1999' });
    expect(c.httpPort).toBe(4000);
    expect(c.mqttPort).toBe(1999);
    expect(c.servicePrefix).toBe('drivewire');
    expect(c.serviceUrls.telemetry).toBeNull();
  });

  it('reports every problem at once', () => {
    try {
      loadConfig({ httpPort: 'abc', only: 'everything', 'url.trip': 'ftp://x' }, {});
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([
        '--only / DRIVEWIRE_ONLY: "everything" must be one of all, api, gateway, workers',
        '--http-port / DRIVEWIRE_HTTP_PORT: "abc" is not a port (0-65535)',
        '--url-trip / DRIVEWIRE_URL_TRIP: "ftp://x" is not an http(s) URL',
      ]);
    }
  });

  it('allows frames 60 s ahead of the clock unless DRIVEWIRE_MAX_FUTURE_SKEW_MS says otherwise', () => {
    expect(loadConfig({}, {}).maxFutureSkewMs).toBe(60_000);
    expect(loadConfig({}, { DRIVEWIRE_MAX_FUTURE_SKEW_MS: '5000' }).maxFutureSkewMs).toBe(5000);
    expect(() => loadConfig({ maxFutureSkewMs: '-1' }, {})).toThrow('--max-future-skew-ms / DRIVEWIRE_MAX_FUTURE_SKEW_MS: "-1" is not a non-negative integer');
  });

  it('limits each device to 500 frames/s (burst 1000) and 1 MiB/s (burst 2 MiB) unless told otherwise; 0 is no limit', () => {
    expect(loadConfig({}, {})).toMatchObject({
      deviceFramesPerSecond: 500, deviceFramesBurst: 1000, deviceBytesPerSecond: 1048576, deviceBytesBurst: 2097152,
    });
    const c = loadConfig({ deviceFramesPerSecond: '0.5' }, { DRIVEWIRE_DEVICE_FRAMES_PER_SECOND: '20', DRIVEWIRE_DEVICE_BYTES_PER_SECOND: '0' });
    expect([c.deviceFramesPerSecond, c.deviceBytesPerSecond]).toEqual([0.5, 0]);
    expect(() => loadConfig({ deviceFramesBurst: '-1' }, {})).toThrow('--device-frames-burst / DRIVEWIRE_DEVICE_FRAMES_BURST: "-1" is not a non-negative integer');
  });

  it('reads DATABASE_URL from the environment, after DRIVEWIRE_DATABASE_URL and the flag', () => {
    expect(loadConfig({}, { DATABASE_URL: 'postgres://x/y' }).databaseUrl).toBe('postgres://x/y');
    expect(loadConfig({}, { DATABASE_URL: 'postgres://x/y', DRIVEWIRE_DATABASE_URL: 'postgres://d/w' }).databaseUrl).toBe('postgres://d/w');
    expect(loadConfig({ databaseUrl: 'postgres://f/l' }, { DATABASE_URL: 'postgres://x/y', DRIVEWIRE_DATABASE_URL: 'postgres://d/w' }).databaseUrl)
      .toBe('postgres://f/l');
    expect(loadConfig({}, { DATABASE_URL: 'postgres://x/y', DRIVEWIRE_DATABASE_URL: '' }).databaseUrl).toBe('postgres://x/y');
    expect(loadConfig({}, {}).databaseUrl).toBeNull();
  });

  it('reads booleans as 1/true/yes/on and 0/false/no/off, and names a bad one', () => {
    expect(loadConfig({}, { DRIVEWIRE_TRIPS: 'off', DRIVEWIRE_ALLOW_PRIVATE_WEBHOOKS: 'YES' })).toMatchObject({ trips: false, allowPrivateWebhooks: true });
    expect(loadConfig({ trips: false }, { DRIVEWIRE_TRIPS: '1' }).trips).toBe(false);
    expect(() => loadConfig({}, { DRIVEWIRE_TRIPS: 'maybe' })).toThrow('--trips / DRIVEWIRE_TRIPS: "maybe" is not a boolean');
  });

  it('wants the TLS certificate and key together', () => {
    const message = '--mqtt-tls-cert / DRIVEWIRE_MQTT_TLS_CERT: must be given together with --mqtt-tls-key (both or neither)';
    expect(() => loadConfig({ mqttTlsCert: 'cert.pem' }, {})).toThrow(message);
    expect(() => loadConfig({}, { DRIVEWIRE_MQTT_TLS_KEY: 'key.pem' })).toThrow(message);
    expect(loadConfig({ mqttTlsCert: 'cert.pem' }, { DRIVEWIRE_MQTT_TLS_KEY: 'key.pem' })).toMatchObject({ mqttTlsCert: 'cert.pem', mqttTlsKey: 'key.pem' });
  });

  it('reports a value that does not parse once, without the rules it cannot be checked against', () => {
    for (const flags of [{ mqttConnectTimeoutMs: 'abc' }, { webhookConcurrency: 'many' }]) {
      try {
        loadConfig(flags, {});
        expect.unreachable();
      } catch (err) {
        expect((err as ConfigError).problems).toHaveLength(1);
        expect((err as ConfigError).problems[0]).toMatch(/is not a non-negative integer$/);
      }
    }
  });

  it('resolves the data directory, and gives defaults to code that runs without a Config', () => {
    expect(loadConfig({ dataDir: 'rel/dir' }, {}).dataDir).toBe(path.resolve('rel/dir'));
    expect(loadConfig({}, {}).dataDir).toBe(path.resolve('.drivewire'));
    expect(configDefault('maxFutureSkewMs')).toBe(60_000);
    expect(configDefault('only')).toEqual(['api', 'gateway', 'workers']);
  });

  it('types each setting from its declaration', () => {
    expectTypeOf<Config['only']>().toEqualTypeOf<PartName[]>();
    expectTypeOf<Config['httpPort']>().toEqualTypeOf<number>();
    expectTypeOf<Config['publicUrl']>().toEqualTypeOf<string | null>();
    expectTypeOf<Config['mqttWsPort']>().toEqualTypeOf<number | null>();
    expectTypeOf<Config['mqttMaxPacketBytes']>().toEqualTypeOf<number>(); // derived when unset
    expectTypeOf<Config['trips']>().toEqualTypeOf<boolean>();
    expectTypeOf<Config['logLevel']>().toEqualTypeOf<'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'>();
    expectTypeOf<Config['serviceUrls']>().toEqualTypeOf<Record<ServiceKind, string | null>>();
    expectTypeOf<keyof Config>().toEqualTypeOf<SettingKey>();
  });
});

describe('time parameters', () => {
  it('parses ISO 8601, YYYY-MM-DD and epoch ms; empty is absent', () => {
    expect(parseTimeParam('since', '2014-09-07T12:32:57.893-05:00')!.toISOString()).toBe('2014-09-07T17:32:57.893Z');
    expect(parseTimeParam('since', '2016-12-05')!.toISOString()).toBe('2016-12-05T00:00:00.000Z');
    expect(parseTimeParam('since', '1410111177893')!.toISOString()).toBe('2014-09-07T17:32:57.893Z');
    expect(parseTimeParam('since', '2016-02-14T06:00:00-06:00')!.toISOString()).toBe('2016-02-14T12:00:00.000Z');
    expect(parseTimeParam('since', '')).toBeUndefined();
    expect(() => parseTimeParam('until', '2016-13-45')).toThrow('until "2016-13-45" is not a valid date');
  });
});

describe('MQTT connection limits', () => {
  it('defaults the packet limit to the payload limit plus 64 KiB, and takes a flag or the environment', () => {
    expect(loadConfig({}, {})).toMatchObject({ mqttMaxPacketBytes: 262144 + 65536, mqttConnectTimeoutMs: 10_000 });
    expect(loadConfig({}, { DRIVEWIRE_MAX_PAYLOAD_BYTES: '1000' }).mqttMaxPacketBytes).toBe(1000 + 65536);
    expect(loadConfig({ mqttMaxPacketBytes: '4096' }, { DRIVEWIRE_MQTT_CONNECT_TIMEOUT_MS: '500' }))
      .toMatchObject({ mqttMaxPacketBytes: 4096, mqttConnectTimeoutMs: 500 });
    expect(() => loadConfig({ mqttConnectTimeoutMs: '0' }, {})).toThrow('must be at least 1');
  });
});

describe('HTTP slow-client limits', () => {
  it('defaults the request and headers timeouts, the minimum body rate and the per-address cap, and refuses headers later than the request', () => {
    expect(loadConfig({}, {})).toMatchObject({
      httpRequestTimeoutMs: 30_000, httpHeadersTimeoutMs: 10_000, httpBodyMinBytesPerSec: 240, httpBodyGraceMs: 5_000, httpMaxConnectionsPerIp: 256,
    });
    expect(loadConfig({ httpRequestTimeoutMs: '2000' }, { DRIVEWIRE_HTTP_HEADERS_TIMEOUT_MS: '1000', DRIVEWIRE_HTTP_BODY_MIN_BYTES_PER_SEC: '0' }))
      .toMatchObject({ httpRequestTimeoutMs: 2000, httpHeadersTimeoutMs: 1000, httpBodyMinBytesPerSec: 0 });
    expect(() => loadConfig({ httpRequestTimeoutMs: '0' }, {})).toThrow('must be at least 1');
    expect(() => loadConfig({ httpRequestTimeoutMs: '5000' }, {})).toThrow('at most the request timeout');
  });
});

describe('live stream limits', () => {
  it('defaults to 32 streams per application and 1 MiB unsent per stream, and refuses 0', () => {
    expect(loadConfig({}, {})).toMatchObject({ streamsPerApplication: 32, streamMaxBufferedBytes: 1024 * 1024 });
    expect(loadConfig({}, { DRIVEWIRE_STREAMS_PER_APPLICATION: '2' }).streamsPerApplication).toBe(2);
    expect(() => loadConfig({ streamMaxBufferedBytes: '0' }, {})).toThrow('must be at least 1');
  });
});

describe('late recompute bounds and per-device rate limit bursts', () => {
  it('refuses a late recompute bound of 0 messages or 0 ms', () => {
    expect(loadConfig({}, {})).toMatchObject({ lateRecomputeMaxMessages: 10_000, lateRecomputeMaxAgeMs: 24 * 60 * 60_000 });
    expect(loadConfig({}, { DRIVEWIRE_LATE_RECOMPUTE_MAX_MESSAGES: '1', DRIVEWIRE_LATE_RECOMPUTE_MAX_AGE_MS: '1' }))
      .toMatchObject({ lateRecomputeMaxMessages: 1, lateRecomputeMaxAgeMs: 1 });
    expect(() => loadConfig({}, { DRIVEWIRE_LATE_RECOMPUTE_MAX_MESSAGES: '0' }))
      .toThrow('--late-recompute-max-messages / DRIVEWIRE_LATE_RECOMPUTE_MAX_MESSAGES: must be at least 1');
    expect(() => loadConfig({ lateRecomputeMaxAgeMs: '0' }, {}))
      .toThrow('--late-recompute-max-age-ms / DRIVEWIRE_LATE_RECOMPUTE_MAX_AGE_MS: must be at least 1');
  });

  it('refuses a burst of 0 for a rate above 0, and accepts it with the limit off (rate 0)', () => {
    expect(() => loadConfig({}, { DRIVEWIRE_DEVICE_FRAMES_BURST: '0' }))
      .toThrow('--device-frames-burst / DRIVEWIRE_DEVICE_FRAMES_BURST: must be at least 1 while the rate is above 0');
    expect(() => loadConfig({ deviceBytesBurst: '0' }, {}))
      .toThrow('--device-bytes-burst / DRIVEWIRE_DEVICE_BYTES_BURST: must be at least 1 while the rate is above 0');
    expect(loadConfig({ deviceFramesBurst: '0', deviceFramesPerSecond: '0' }, { DRIVEWIRE_DEVICE_BYTES_BURST: '0', DRIVEWIRE_DEVICE_BYTES_PER_SECOND: '0' }))
      .toMatchObject({ deviceFramesBurst: 0, deviceFramesPerSecond: 0, deviceBytesBurst: 0, deviceBytesPerSecond: 0 });
    expect(loadConfig({ deviceFramesBurst: '1', deviceBytesBurst: '1' }, {})).toMatchObject({ deviceFramesBurst: 1, deviceBytesBurst: 1 });
  });
});

describe('webhook delivery slots', () => {
  it('defaults to 64 slots, 16 per endpoint and 32 per application, and refuses shares of 0 or past the slots', () => {
    expect(loadConfig({}, {})).toMatchObject({ webhookConcurrency: 64, webhookEndpointConcurrency: 16, webhookApplicationConcurrency: 32 });
    expect(loadConfig({ webhookConcurrency: '8' }, { DRIVEWIRE_WEBHOOK_ENDPOINT_CONCURRENCY: '2', DRIVEWIRE_WEBHOOK_APPLICATION_CONCURRENCY: '4' }))
      .toMatchObject({ webhookConcurrency: 8, webhookEndpointConcurrency: 2, webhookApplicationConcurrency: 4 });
    expect(() => loadConfig({ webhookConcurrency: '0' }, {})).toThrow('--webhook-concurrency / DRIVEWIRE_WEBHOOK_CONCURRENCY: must be at least 1');
    expect(() => loadConfig({ webhookEndpointConcurrency: '65' }, {})).toThrow('--webhook-endpoint-concurrency / DRIVEWIRE_WEBHOOK_ENDPOINT_CONCURRENCY: must be at least 1 and at most the webhook concurrency');
    expect(() => loadConfig({ webhookApplicationConcurrency: '0' }, {})).toThrow('--webhook-application-concurrency / DRIVEWIRE_WEBHOOK_APPLICATION_CONCURRENCY: must be at least 1 and at most the webhook concurrency');
    expect(() => loadConfig({ webhookConcurrency: '8' }, {})).toThrow('DRIVEWIRE_WEBHOOK_APPLICATION_CONCURRENCY: must be at least 1 and at most the webhook concurrency');
  });
});
