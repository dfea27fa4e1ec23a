// The commander options of the settings (lib/config.ts), made from their declarations: `serve` takes every one,
// `migrate` and `credentials rotate` the database's, the client commands --data-dir. Commander gives them no
// defaults, so that loadConfig alone applies flag > environment > default.
import { Option, type Command } from 'commander';
import {
  SETTING_INPUTS, SETTING_KEYS, SETTINGS, loadConfig, type Config, type Setting, type SettingInput, type SettingKey,
} from '../lib/config.js';

const KIB = 1024;
const MIB = 1024 * KIB;

/** A number of bytes or milliseconds as a person reads it (`256 KiB`, `15 min`), or null where the number says it. */
function readable(n: number, unit: string | undefined): string | null {
  if (unit === 'bytes' || unit === 'bytes/s') {
    const per = unit === 'bytes/s' ? '/s' : '';
    if (n >= MIB && n % MIB === 0) return `${n / MIB} MiB${per}`;
    if (n >= KIB && n % KIB === 0) return `${n / KIB} KiB${per}`;
  }
  if (unit === 'ms' && n >= 1000) {
    for (const [size, name] of [[3_600_000, 'h'], [60_000, 'min'], [1000, 's']] as const) {
      if (n % size === 0) return `${n / size} ${name}`;
    }
  }
  return null;
}

/** A setting's default as `serve --help` and the reference show it. */
export function defaultText(s: Setting): string {
  if (s.defaultText) return s.defaultText;
  if (s.kind === 'bool') return s.def ? 'on' : 'off';
  if (typeof s.def === 'number') {
    const plain = readable(s.def, s.unit);
    return plain ? `${s.def} = ${plain}` : String(s.def);
  }
  return String(s.def);
}

/** The value a flag takes, as its help writes it (`--http-port <port>`). */
function placeholder(s: Setting): string {
  if (s.arg) return s.arg;
  if (s.kind === 'port') return 'port';
  if (s.kind === 'url' || s.kind === 'serviceUrls') return 'url';
  if (s.unit === 'ms' || s.unit === 'bytes') return s.unit;
  return 'value';
}

/** The flag as commander declares it: a switch for a boolean (`--no-trips` where it is on by default). */
export function optionFlags(input: SettingInput): string {
  const s: Setting = SETTINGS[input.setting];
  if (s.kind === 'bool') return s.def === true ? `--no-${input.flag.slice(2)}` : input.flag;
  return `${input.flag} <${placeholder(s)}>`;
}

function option(input: SettingInput, grouped: boolean): Option {
  const s: Setting = SETTINGS[input.setting];
  const what = input.service ? `link base of the ${input.service} service` : s.description;
  const env = s.envFallback ? `${input.env} or ${s.envFallback}` : input.env;
  const opt = new Option(optionFlags(input), `${what} (default: ${defaultText(s)}; env: ${env})`);
  return grouped ? opt.helpGroup(`${s.group}:`) : opt;
}

/**
 * Adds the options of `keys` (every setting by default) to `cmd`; `grouped`: under their group's heading in its help,
 * as the reference groups them, else among the command's other options.
 */
export function withSettings(cmd: Command, keys: readonly SettingKey[] = SETTING_KEYS, grouped = true): Command {
  for (const input of SETTING_INPUTS) if (keys.includes(input.setting)) cmd.addOption(option(input, grouped));
  return cmd;
}

/** `cmd`'s configuration: the settings given on its command line, else the environment, else the defaults. */
export function configOf(cmd: Command, env: NodeJS.ProcessEnv = process.env): Config {
  const flags: Record<string, unknown> = {};
  for (const input of SETTING_INPUTS) {
    const name = new Option(optionFlags(input)).attributeName();
    if (cmd.getOptionValueSource(name) === 'cli') flags[input.key] = cmd.getOptionValue(name);
  }
  return loadConfig(flags, env);
}
