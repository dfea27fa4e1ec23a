// `npm run docs`: writes the generated reference pages, docs/reference/configuration.md from the setting declarations
// (lib/config.ts) and docs/reference/cli.md from the commander program (bin/program.ts), and the generated sections of
// other pages (REFERENCE_SECTIONS). test/bin/reference-docs.test.ts fails when a committed page or section is not what
// this writes now.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Argument, Command, Option } from 'commander';
import { GROUPS, SETTING_INPUTS, SETTING_KEYS, SETTINGS, flagOf, type Setting, type SettingKey } from '../lib/config.js';
import { SERVICE_KINDS } from '../lib/services.js';
import { BENCH_SCENARIOS } from '../bench/scenarios.js';
import { CLIENT_ENV } from './client.js';
import { createProgram } from './program.js';
import { defaultText, optionFlags } from './settings.js';
import { gradesByRoute } from './grades-by-route.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const generated = (from: string) =>
  `<!-- Generated from ${from} by \`npm run docs\` (bin/reference-docs.ts): edit the source, then run \`npm run docs\`. -->\n`;

/** Text in a Markdown table cell: HTML-like placeholders (`<data-dir>`) shown, not taken for tags; pipes escaped. */
const cell = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\|/g, '\\|');
/** Code in a table cell: only pipes need escaping there. */
const code = (text: string) => `\`${text.replace(/\|/g, '\\|')}\``;
/** Prose outside tables; `docs/…` paths become links relative to docs/reference/. */
const prose = (text: string) => text.replace(/</g, '&lt;').replace(/>/g, '&gt;')
  .replace(/\bdocs\/([\w/.-]+\.md)(#[\w-]+)?/g, (_m, page: string, hash = '') => `[${page.replace(/\.md$/, '')}](${path.posix.relative('reference', page)}${hash})`);
const anchor = (heading: string) => heading.toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-');

const KIND_TEXT: Record<Setting['kind'], string> = {
  string: 'text', path: 'path', int: 'integer ≥ 0', number: 'number ≥ 0', port: 'port (0-65535)', bool: 'boolean',
  url: 'http(s) URL', tiles: 'tile URL template', enum: 'one of', parts: 'list of parts', serviceUrls: 'http(s) URL',
};

function typeText(s: Setting): string {
  if (s.kind === 'enum' || s.kind === 'parts') return `${KIND_TEXT[s.kind]} ${s.values!.map(code).join(', ')}`;
  return cell(KIND_TEXT[s.kind]);
}

function defaultCell(s: Setting): string {
  if (s.def === null || s.defaultText) return cell(defaultText(s));
  if (s.kind === 'bool') return defaultText(s);
  const shown = defaultText(s);
  return shown === String(s.def) ? code(shown) : `${code(String(s.def))} (${cell(shown.slice(String(s.def).length + 3))})`;
}

function flagCell(key: SettingKey, s: Setting): string {
  const input = SETTING_INPUTS.find((i) => i.setting === key)!;
  if (s.kind === 'serviceUrls') return code(flagOf(key));
  return code(optionFlags(input).replace(/ <.*>$/, ''));
}

function envCell(s: Setting): string {
  return s.envFallback ? `${code(s.env)}, else ${code(s.envFallback)}` : code(s.env);
}

function descriptionCell(s: Setting): string {
  const must = s.rules?.length ? ` Must be ${s.rules.map((r) => (r.refers && !r.text.includes(flagOf(r.refers)) ? `${r.text} (${flagOf(r.refers)})` : r.text)).join(' and ')}.` : '';
  return cell(`${s.description[0].toUpperCase()}${s.description.slice(1)}.${must}`);
}

/** docs/reference/configuration.md: every setting, by group, from its declaration. */
export function configurationReference(): string {
  const lines = [
    generated('lib/config.ts'),
    '# Configuration',
    '',
    'Every setting of the platform is a flag of `drivewire serve` and an environment variable. A flag wins over the',
    'environment, which wins over the default; `migrate` and `credentials rotate` take the two database settings,',
    'and the client commands `--data-dir` ([CLI reference](cli.md)). A bad value stops the start with the list of',
    'every problem, each naming the flag and the variable.',
    '',
    '- Booleans: a flag alone turns one on (`--allow-private-webhooks`) or off (`--no-trips`); in the environment',
    '  `1`, `true`, `yes` or `on` and `0`, `false`, `no` or `off`.',
    '- Numbers are plain: bytes, milliseconds (ms), per second. Integers are whole numbers ≥ 0 unless a constraint says more.',
    '- An empty environment variable counts as unset.',
    `- \`--url-<service>\` / \`DRIVEWIRE_URL_<SERVICE>\` is one setting per sub-service: ${SERVICE_KINDS.map(code).join(', ')}.`,
    '',
    'What each limit protects, and what a device or application sees when it reaches one: [limits](limits.md).',
    '',
    ...GROUPS.map((g) => `- [${g}](#${anchor(g)})`),
  ];
  for (const group of GROUPS) {
    const keys = SETTING_KEYS.filter((k) => SETTINGS[k].group === group);
    lines.push('', `## ${group}`, '', '| flag | environment | type | unit | default | description |', '|---|---|---|---|---|---|');
    for (const key of keys) {
      const s: Setting = SETTINGS[key];
      lines.push(`| ${flagCell(key, s)} | ${envCell(s)} | ${typeText(s)} | ${cell(s.unit ?? '')} | ${defaultCell(s)} | ${descriptionCell(s)} |`);
    }
    const notes = keys.filter((k) => (SETTINGS[k] as Setting).notes);
    if (notes.length) {
      lines.push('');
      for (const key of notes) lines.push(`- ${code(flagOf(key))}: ${prose((SETTINGS[key] as Setting).notes!)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The command's full name, as typed: `drivewire credentials rotate`. */
function fullName(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

function walk(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(walk)];
}

function commandSection(cmd: Command): string[] {
  const help = cmd.createHelp();
  const lines = [`## ${fullName(cmd)}`, '', prose(cmd.description()), '', '```sh', fullUsage(cmd), '```'];
  if (help.visibleOptions(cmd).some((o) => o.helpGroupHeading)) lines.push('', 'Its settings in full: [configuration](configuration.md).');
  const args: readonly Argument[] = help.visibleArguments(cmd);
  if (args.length) {
    lines.push('', '| argument | description |', '|---|---|');
    for (const a of args) lines.push(`| ${code(help.argumentTerm(a))} | ${cell(help.argumentDescription(a))} |`);
  }
  const options = help.visibleOptions(cmd).filter((o: Option) => o.long !== '--help');
  const groups = [...new Set(options.map((o) => o.helpGroupHeading ?? 'Options:'))];
  for (const group of groups) {
    const title = group.replace(/:$/, '');
    lines.push('', ...(groups.length > 1 || title !== 'Options' ? [`**${title}**`, ''] : []), '| option | description |', '|---|---|');
    for (const o of options.filter((x) => (x.helpGroupHeading ?? 'Options:') === group)) {
      lines.push(`| ${code(help.optionTerm(o))} | ${o.mandatory ? '**required**: ' : ''}${cell(help.optionDescription(o))} |`);
    }
  }
  if (cmd.name() === 'bench') {
    lines.push('', prose('Scenarios (docs/development/benchmarks.md):'), '', '| scenario | what it measures |', '|---|---|');
    for (const s of BENCH_SCENARIOS) lines.push(`| ${code(s.name)} | ${cell(s.description)} |`);
  }
  return lines;
}

/** `drivewire credentials rotate [options]`: the usage line with every parent's name. */
function fullUsage(cmd: Command): string {
  const usage = cmd.createHelp().commandUsage(cmd);
  return cmd.parent ? `${fullName(cmd.parent)} ${usage.split(' ').slice(fullName(cmd.parent).split(' ').length).join(' ')}` : usage;
}

/** docs/reference/cli.md: every command and subcommand of the commander program, with its usage and options. */
export function cliReference(program: Command = createProgram()): string {
  const commands = walk(program).slice(1);
  const lines = [
    generated('the commander program of bin/program.ts'),
    '# Command line',
    '',
    '`drivewire <command>` (`npx drivewire`, or `bin/drivewire.js` in a checkout). Every command and subcommand takes',
    '`--help`. The server\'s settings are flags of `serve` and environment variables: [configuration](configuration.md).',
    '',
    'The client commands (`apps`, `devices`, `routes`, `dummies`, `runs`, `simulate`, `trips`) call the REST API with',
    'the credentials that the first start wrote to `<data-dir>/credentials.json`, unless the environment gives others:',
    '',
    '| environment | |',
    '|---|---|',
    ...Object.values(CLIENT_ENV).map((e) => `| ${code(e.name)} | ${cell(e.description)} |`),
    '',
    'A failing command prints one line, `drivewire: <reason>`, on stderr and exits with 1. The launcher runs the',
    'compiled build in `dist/` (`npm run build`) while it is newer than every source, else the TypeScript sources',
    'through tsx; `DRIVEWIRE_TSX=1` always takes the sources.',
    '',
    ...commands.map((c) => `${'  '.repeat(fullName(c).split(' ').length - 2)}- [${fullName(c)}](#${anchor(fullName(c))})`
      + `: ${prose(c.description())}`),
  ];
  for (const cmd of commands) lines.push('', ...commandSection(cmd));
  return `${lines.join('\n')}\n`;
}

/** The generated pages, relative to the repository root. */
export const REFERENCE_PAGES: readonly { path: string; render: () => string }[] = [
  { path: 'docs/reference/configuration.md', render: configurationReference },
  { path: 'docs/reference/cli.md', render: () => cliReference() },
];

/**
 * Generated sections of hand-written pages: the text between `<!-- name: generated … -->` and `<!-- /name -->`.
 * `from` names the sources in the opening marker.
 */
export const REFERENCE_SECTIONS: readonly { path: string; name: string; from: string; render: () => string }[] = [
  { path: 'docs/concepts/trips-and-report-cards.md', name: 'grades-by-route', from: 'routes-data/ and db/trips/formulas.ts',
    render: gradesByRoute },
];

/** `text` with the section's content replaced by what it renders now (unchanged when its markers are missing). */
export function withSection(text: string, s: (typeof REFERENCE_SECTIONS)[number]): string {
  const open = new RegExp(`<!-- ${s.name}: [^\n]*-->\n`);
  const close = `<!-- /${s.name} -->`;
  const start = text.search(open);
  const end = text.indexOf(close);
  if (start < 0 || end < start) return text;
  const opening = `<!-- ${s.name}: generated from ${s.from} by \`npm run docs\` -->\n`;
  return `${text.slice(0, start)}${opening}${s.render()}\n${text.slice(end)}`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const pages = [...REFERENCE_PAGES, ...REFERENCE_SECTIONS.map((s) => ({
    path: s.path, render: () => withSection(fs.readFileSync(path.join(ROOT, s.path), 'utf8'), s),
  }))];
  for (const page of pages) {
    const file = path.join(ROOT, page.path);
    const text = page.render();
    const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
    if (before !== text) {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, text);
    }
    process.stdout.write(`${page.path}: ${before === text ? 'up to date' : 'written'}\n`);
  }
}
