// The generated reference pages are committed: each must be what `npm run docs` writes from the sources now.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REFERENCE_PAGES, cliReference, configurationReference } from '../../bin/reference-docs.js';
import { SETTING_INPUTS, SETTING_KEYS, flagOf } from '../../lib/config.js';
import type { Command } from 'commander';
import { createProgram } from '../../bin/program.js';
import { optionFlags } from '../../bin/settings.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('the generated reference pages', () => {
  for (const page of REFERENCE_PAGES) {
    it(`${page.path} is what npm run docs writes`, () => {
      const file = path.join(ROOT, page.path);
      const committed = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '(missing)';
      expect(committed, `${page.path} is out of date: run \`npm run docs\` and commit it`).toBe(page.render());
    });
  }

  it('start with a line saying they are generated and how to regenerate them', () => {
    for (const page of REFERENCE_PAGES) expect(page.render().split('\n')[0]).toMatch(/^<!-- Generated from .* by `npm run docs`/);
  });

  it('do not depend on the environment they are generated in', () => {
    const set = { DRIVEWIRE_DATA_DIR: '/elsewhere', DRIVEWIRE_HTTP_PORT: '4321' };
    const before = Object.fromEntries(Object.keys(set).map((k) => [k, process.env[k]]));
    try {
      Object.assign(process.env, set);
      expect(configurationReference()).not.toMatch(/elsewhere|4321/);
      expect(cliReference(createProgram())).not.toMatch(/elsewhere|4321/);
    } finally {
      for (const [k, v] of Object.entries(before)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
    }
  });

  it('name every setting in the configuration reference, and every command and setting flag in the CLI reference', () => {
    const config = configurationReference();
    for (const key of SETTING_KEYS) {
      const input = SETTING_INPUTS.find((i) => i.setting === key)!;
      expect(config).toContain(`| \`${key === 'serviceUrls' ? flagOf(key) : optionFlags(input).split(' ')[0]}\` |`);
    }
    const cli = cliReference(createProgram());
    const names = (c: Command, prefix: string): string[] =>
      c.commands.flatMap((sub) => [`${prefix} ${sub.name()}`, ...names(sub, `${prefix} ${sub.name()}`)]);
    for (const name of names(createProgram(), 'drivewire')) expect(cli).toContain(`\n## ${name}\n`);
    for (const input of SETTING_INPUTS) expect(cli).toContain(`| \`${optionFlags(input)}\` |`);
  });
});
