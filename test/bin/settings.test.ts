// The commander options of the settings (bin/settings.ts): one per declared setting, and only what the command line
// gives reaches loadConfig, so that flag > environment > default holds for every kind, switches included.
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { GROUPS, SETTINGS, SETTING_INPUTS, SETTING_KEYS, type Setting } from '../../lib/config.js';
import { createProgram } from '../../bin/program.js';
import { configOf, optionFlags, withSettings } from '../../bin/settings.js';

/** A command with every setting, parsed from `args`; its configuration read with `env`. */
function parsed(args: string[], env: NodeJS.ProcessEnv = {}) {
  let config: ReturnType<typeof configOf> | undefined;
  const cmd = withSettings(new Command('serve')).exitOverride().action((_o, c: Command) => { config = configOf(c, env); });
  cmd.parse(args, { from: 'user' });
  return config!;
}

describe('setting options', () => {
  it('take a flag over the environment over the default', () => {
    const c = parsed(['--http-port', '4000', '--url-trip', 'http://trips.example/', '--only', 'api,workers'],
      { DRIVEWIRE_HTTP_PORT: '5000', DRIVEWIRE_MQTT_PORT: '1999' });
    expect(c).toMatchObject({ httpPort: 4000, mqttPort: 1999, only: ['api', 'workers'], servicePrefix: 'drivewire' });
    expect(c.serviceUrls).toMatchObject({ trip: 'http://trips.example', telemetry: null });
  });

  it('leave a switch that is not given to the environment, and turn it on or off when it is', () => {
    expect(parsed([], { DRIVEWIRE_TRIPS: 'false', DRIVEWIRE_ALLOW_PRIVATE_WEBHOOKS: 'yes' })).toMatchObject({ trips: false, allowPrivateWebhooks: true });
    expect(parsed([], {})).toMatchObject({ trips: true, allowPrivateWebhooks: false });
    expect(parsed(['--no-trips', '--allow-private-webhooks'], { DRIVEWIRE_TRIPS: 'on', DRIVEWIRE_ALLOW_PRIVATE_WEBHOOKS: 'off' }))
      .toMatchObject({ trips: false, allowPrivateWebhooks: true });
  });

  it('reach every setting by its flag', () => {
    for (const input of SETTING_INPUTS) {
      const s: Setting = SETTINGS[input.setting];
      if (s.kind === 'bool') continue;
      const value = s.kind === 'url' || s.kind === 'serviceUrls' ? 'http://x.example' : s.kind === 'enum' ? s.values![0]
        : s.kind === 'parts' ? 'api' : s.kind === 'tiles' ? 'http://t.example/{z}/{x}/{y}' : s.kind === 'path' ? '/tmp/x'
          : ['int', 'number', 'port'].includes(s.kind) ? '7000' : 'text';
      // room for the value under the rules that bind it to another setting (the flag given last wins)
      const room = ['--webhook-concurrency', '20000', '--http-request-timeout-ms', '20000', '--http-headers-timeout-ms', '1',
        ...(input.setting === 'mqttTlsCert' ? ['--mqtt-tls-key', 'key.pem'] : input.setting === 'mqttTlsKey' ? ['--mqtt-tls-cert', 'cert.pem'] : [])];
      const c = parsed([...room, input.flag, value]) as Record<string, unknown>;
      const got = input.service ? (c[input.setting] as Record<string, unknown>)[input.service] : c[input.setting];
      const expected = s.kind === 'parts' ? ['api'] : ['int', 'number', 'port'].includes(s.kind) ? 7000 : value;
      expect(got, input.flag).toEqual(expected);
    }
  });

  it('are the options of serve; migrate and credentials rotate take the database settings', () => {
    const program = createProgram();
    const longs = (c: Command) => c.options.map((o) => o.long);
    const serve = program.commands.find((c) => c.name() === 'serve')!;
    expect(longs(serve)).toEqual(SETTING_INPUTS.map((i) => optionFlags(i).split(' ')[0]));
    const databaseFlags = ['--data-dir', '--database-url'];
    expect(longs(program.commands.find((c) => c.name() === 'migrate')!)).toEqual(databaseFlags);
    const rotate = program.commands.find((c) => c.name() === 'credentials')!.commands.find((c) => c.name() === 'rotate')!;
    expect(longs(rotate)).toEqual(databaseFlags);
  });
});

describe('setting declarations', () => {
  it('give each setting its own flag and environment variable', () => {
    const flags = SETTING_INPUTS.map((i) => i.flag);
    const envs = SETTING_INPUTS.map((i) => i.env);
    expect(new Set(flags).size).toBe(flags.length);
    expect(new Set(envs).size).toBe(envs.length);
    for (const env of envs) expect(env).toMatch(/^DRIVEWIRE_[A-Z0-9_]+$/);
  });

  it('describe each setting in a group, with a default of its kind, and rules that name declared settings', () => {
    for (const key of SETTING_KEYS) {
      const s: Setting = SETTINGS[key];
      expect(GROUPS, key).toContain(s.group);
      expect(s.description, key).toMatch(/^[a-zA-Z].*[^.]$/);
      if (s.def === null) expect(s.defaultText ?? (s.derive && 'derived'), `${key}: what no value means`).toBeTruthy();
      else if (['int', 'number', 'port'].includes(s.kind)) expect(typeof s.def, key).toBe('number');
      else if (s.kind === 'bool') expect(typeof s.def, key).toBe('boolean');
      else expect(typeof s.def, key).toBe('string');
      for (const rule of s.rules ?? []) if (rule.refers) expect(SETTING_KEYS, `${key}'s rule`).toContain(rule.refers);
    }
  });
});
