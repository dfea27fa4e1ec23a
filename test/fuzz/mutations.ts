import fc from 'fast-check';
import { junkString, numberArb, type GenOptions } from './values.js';

/**
 * Mutations of a schema-valid body, applied at one node chosen among all the nodes of the value:
 * wrong types, missing and extra fields, extreme numbers, odd strings, nesting. A mutation is plain data
 * (kind, node index, replacement) so fast-check shrinks it and the corpus stores it.
 */
type Kind = 'replace' | 'delete' | 'extra' | 'nest' | 'stringify' | 'number' | 'string';

export function mutated(valid: fc.Arbitrary<unknown>, o: GenOptions): fc.Arbitrary<unknown> {
  // Nesting is bounded below the JSON depth limit (32) unless hostile mode asks for the classes beyond it.
  const depth = o.hostile ? fc.integer({ min: 1, max: 5000 }) : fc.integer({ min: 1, max: 12 });
  return fc.tuple(
    valid, fc.nat(), fc.constantFrom<Kind>('replace', 'delete', 'extra', 'nest', 'stringify', 'number', 'string'),
    fc.jsonValue({ maxDepth: 3 }), numberArb({ type: 'number' }), junkString(o), fc.string({ maxLength: 12 }), depth,
  ).map(([value, at, kind, json, num, str, key, levels]) =>
    apply(value, at, (node) => mutateNode(node, kind, { json, num, str, key, levels })));
}

interface Material { json: unknown; num: number; str: string; key: string; levels: number }

function mutateNode(node: unknown, kind: Kind, m: Material): unknown {
  switch (kind) {
    case 'replace': return m.json;
    case 'number': return m.num;
    case 'string': return m.str;
    case 'stringify': return JSON.stringify(node) ?? 'undefined';
    case 'nest': {
      let v = node;
      for (let i = 0; i < m.levels; i++) v = i % 2 ? { a: v } : [v];
      return v;
    }
    case 'delete': case 'extra': {
      if (typeof node !== 'object' || node === null) return m.json;
      if (Array.isArray(node)) return kind === 'delete' ? node.slice(1) : [...node, m.json];
      const copy: Record<string, unknown> = { ...(node as Record<string, unknown>) };
      const keys = Object.keys(copy);
      if (kind === 'delete' && keys.length) delete copy[keys[m.levels % keys.length]];
      else copy[m.key] = m.json;
      return copy;
    }
  }
}

/** `value` with its `at`-th node (pre-order, modulo the node count) replaced by `f(node)`. */
export function apply(value: unknown, at: number, f: (node: unknown) => unknown): unknown {
  const count = countNodes(value);
  let target = at % count;
  const walk = (v: unknown): unknown => {
    if (target-- === 0) return f(v);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null) {
      return Object.fromEntries(Object.entries(v).map(([k, c]) => [k, walk(c)]));
    }
    return v;
  };
  return walk(value);
}

function countNodes(v: unknown): number {
  if (Array.isArray(v)) return 1 + v.reduce((n: number, c) => n + countNodes(c), 0);
  if (typeof v === 'object' && v !== null) return 1 + Object.values(v).reduce((n: number, c) => n + countNodes(c), 0);
  return 1;
}
