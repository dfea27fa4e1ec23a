// The documentation's links hold: every relative link in the Markdown pages reaches a file (and, with an #anchor into
// a Markdown page, one of its headings), and every docs page a source file names exists. Pages move and headings
// change wording; without this check a reader finds out by following a dead link.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Folders never read: installed packages, build output, and what runs leave behind. */
const SKIPPED = new Set(['node_modules', 'dist', 'coverage', 'scratch', '.git', '.drivewire', '.cache']);
/** Where source files may name a docs page (in comments, or in strings that print one). */
const SOURCE_DIRS = ['api', 'bin', 'db', 'gateway', 'lib', 'simulator', 'workers', 'console', 'bench', 'test'];
const SOURCE_FILE = /\.(ts|js|mjs|cjs|html|css)$/;

function walk(dir: string, keep: (file: string) => boolean, out: string[] = []): string[] {
  if (!fs.existsSync(dir)) return out;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED.has(entry.name) || entry.name.startsWith('.dist-')) continue;
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(file, keep, out);
    else if (keep(file)) out.push(file);
  }
  return out;
}

const rel = (file: string) => path.relative(ROOT, file).split(path.sep).join('/');

/** The Markdown pages: those at the root (README, CONTRIBUTING, CHANGELOG, …) and every page under docs/. */
function markdownPages(): string[] {
  const top = fs.readdirSync(ROOT).filter((f) => f.endsWith('.md')).map((f) => path.join(ROOT, f));
  return [...top, ...walk(path.join(ROOT, 'docs'), (f) => f.endsWith('.md'))].sort();
}

/** The page's text without fenced code blocks and inline code, where link-like text is an example, not a link. */
function proseOf(markdown: string): string {
  const lines: string[] = [];
  let fence: string | null = null;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (marker && (fence === null || marker.startsWith(fence))) {
      fence = fence === null ? marker : null;
      lines.push('');
      continue;
    }
    lines.push(fence === null ? line.replace(/(`+)[^`]*?\1/g, '') : '');
  }
  return lines.join('\n');
}

/** GitHub's anchor for a heading: its text, lower case, without punctuation but `-` and `_`, spaces as dashes. */
function headingSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image: its text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/[`*]/g, '') // code and emphasis markers
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The anchors a page offers: its headings' slugs (a repeated one gets -1, -2, …) and explicit ids and names. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | null = null;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (marker && (fence === null || marker.startsWith(fence))) { fence = fence === null ? marker : null; continue; }
    if (fence !== null) continue;
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const slug = headingSlug(heading[1]);
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      anchors.add(n === 0 ? slug : `${slug}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+[^>]*(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

/** Link targets in the page's prose: inline links and images, reference definitions, HTML href and src. */
function linkTargets(markdown: string): string[] {
  const prose = proseOf(markdown);
  const targets: string[] = [];
  for (const m of prose.matchAll(/!?\[[^\]]*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g)) targets.push(m[1]);
  for (const m of prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/gm)) targets.push(m[1]);
  for (const m of prose.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g)) targets.push(m[1]);
  return targets.map((t) => t.replace(/^<|>$/g, ''));
}

const external = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');

const anchorCache = new Map<string, Set<string>>();
const anchorsOfFile = (file: string) => {
  let anchors = anchorCache.get(file);
  if (!anchors) anchorCache.set(file, anchors = anchorsOf(fs.readFileSync(file, 'utf8')));
  return anchors;
};

/** What is wrong with a link from `fromFile` to `target` (relative to it, or to the repository root), or null. */
function brokenLink(fromFile: string, target: string, base: string): string | null {
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const file = pathPart === '' ? fromFile : path.resolve(base, decodeURIComponent(pathPart));
  if (!file.startsWith(ROOT)) return `${target}: leaves the repository`;
  if (!fs.existsSync(file)) return `${target}: no such file (${rel(file)})`;
  if (anchor && file.endsWith('.md') && !anchorsOfFile(file).has(anchor)) return `${target}: ${rel(file)} has no heading #${anchor}`;
  return null;
}

describe('documentation links', () => {
  const pages = markdownPages();

  it('finds the pages: the README and the docs/ tree', () => {
    expect(pages.map(rel)).toContain('README.md');
    expect(pages.filter((p) => rel(p).startsWith('docs/')).length).toBeGreaterThan(0);
  });

  it.each(pages.map((p) => [rel(p), p]))('%s: every relative link reaches a file, and its #anchor a heading', (_name, page) => {
    const problems = linkTargets(fs.readFileSync(page, 'utf8'))
      .filter((t) => !external(t))
      .map((t) => brokenLink(page, t, path.dirname(page)))
      .filter((p): p is string => p !== null);
    expect(problems).toEqual([]);
  });

  it('every docs page a source file names exists, with the heading its #anchor names', () => {
    const sources = SOURCE_DIRS.flatMap((d) => walk(path.join(ROOT, d), (f) => SOURCE_FILE.test(f)))
      .filter((f) => f !== fileURLToPath(import.meta.url));
    const problems: string[] = [];
    for (const file of sources) {
      const text = fs.readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?<![\w./-])docs\/[\w./-]*?\.md(?:#[\w-]+)?/g)) {
        const problem = brokenLink(file, m[0], ROOT);
        if (problem) problems.push(`${rel(file)}: ${problem}`);
      }
    }
    expect([...new Set(problems)]).toEqual([]);
  });
});

describe('headingSlug', () => {
  it('makes the anchors GitHub makes', () => {
    expect(headingSlug("Counting PostgreSQL's instructions")).toBe('counting-postgresqls-instructions');
    expect(headingSlug('Devices (MQTT)')).toBe('devices-mqtt');
    expect(headingSlug('The frame, field by field')).toBe('the-frame-field-by-field');
    expect(headingSlug('`drivewire bench` and `--smoke`')).toBe('drivewire-bench-and---smoke');
    expect(headingSlug('[Unreleased]')).toBe('unreleased');
    expect(headingSlug('Raw OBD-II PIDs')).toBe('raw-obd-ii-pids');
  });
});
