import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../lib/config.js';
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

  it('limits each device to 500 frames/s (burst 1000) and 1 MiB/s (burst 2 MiB) unless told otherwise; 0 is no limit', () => {
    expect(loadConfig({}, {})).toMatchObject({
      deviceFramesPerSecond: 500, deviceFramesBurst: 1000, deviceBytesPerSecond: 1048576, deviceBytesBurst: 2097152,
    });
    const c = loadConfig({ deviceFramesPerSecond: '0.5' }, { DRIVEWIRE_DEVICE_FRAMES_PER_SECOND: '20', DRIVEWIRE_DEVICE_BYTES_PER_SECOND: '0' });
    expect([c.deviceFramesPerSecond, c.deviceBytesPerSecond]).toEqual([0.5, 0]);
    expect(() => loadConfig({ deviceFramesBurst: '-1' }, {})).toThrow('--device-frames-burst / DRIVEWIRE_DEVICE_FRAMES_BURST: "-1" is not a non-negative integer');
  });

  it('reads DATABASE_URL from the environment', () => {
    expect(loadConfig({}, { DATABASE_URL: 'postgres://x/y' }).databaseUrl).toBe('postgres://x/y');
  });
});

describe('time parameters', () => {
  it('parses ISO 8601, YYYY-MM-DD and epoch ms; empty is absent', () => {
    expect(parseTimeParam('since', '2014-09-07T12:32:57.893-05:00')!.toISOString()).toBe('2014-09-07T17:32:57.893Z');
    expect(parseTimeParam('since', '2016-12-05')!.toISOString()).toBe('2016-12-05T00:00:00.000Z');
    expect(parseTimeParam('since', '1410111177893')!.toISOString()).toBe('2014-09-07T17:32:57.893Z');
    expect(parseTimeParam('since', '2016-02-14T06:00:00-06:00')!.toISOString()).toBe('2016-02-14T12:00:00.000Z');
    expect(parseTimeParam('since', '')).toBeUndefined();
    expect(() => parseTimeParam('until', '2016-13-45')).toThrow('until must be');
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
