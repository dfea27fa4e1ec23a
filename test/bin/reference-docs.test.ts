// The generated reference pages are committed: each must be what `npm run docs` writes from the sources now.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REFERENCE_PAGES, REFERENCE_SECTIONS, cliReference, configurationReference, withSection } from '../../bin/reference-docs.js';
import { gradesByRoute } from '../../bin/grades-by-route.js';
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

  for (const section of REFERENCE_SECTIONS) {
    it(`the ${section.name} section of ${section.path} is what npm run docs writes`, () => {
      const committed = fs.readFileSync(path.join(ROOT, section.path), 'utf8');
      expect(committed).toContain(`<!-- ${section.name}: generated from ${section.from} by \`npm run docs\` -->\n`);
      expect(committed).toContain(`<!-- /${section.name} -->`);
      expect(committed, `${section.path} is out of date: run \`npm run docs\` and commit it`).toBe(withSection(committed, section));
    });
  }

  it('grade the stored routes with the trips stage\'s formula: one hard brake on a 1.7 km or 4.5 km route is a B', () => {
    const rows = gradesByRoute().split('\n');
    expect(rows).toContain('| DFW - Downtown Route 2 | 1.72 | A (0.00) | A (0.63) | B (1.25) | B (1.25) | C (2.50) |');
    expect(rows).toContain('| DFW - Downtown Route 1 | 4.51 | A (0.00) | A (0.63) | B (1.25) | B (1.25) | C (2.50) |');
    // shorter than 1 km: incomplete
    expect(rows).toContain('| DFW - Back Home | 0.39 | I | I | I | I | I |');
  });

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
