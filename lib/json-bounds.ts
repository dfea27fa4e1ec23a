// Bounds on JSON from outside (device frames, request bodies). V8's JSON.parse does not recurse, but
// JSON.stringify and any recursive walk overflow the stack on deep nesting (10,000
// nested `[`, 20 KB, would kill the process), so a parsed value's depth is measured without recursion
// before anything else walks it, and values are printed into messages only through `preview`.

/** Deepest nesting of arrays/objects accepted from outside; real frames and bodies nest fewer than 10. */
export const MAX_JSON_DEPTH = 32;

/** Whether `value` nests arrays/objects more than `max` levels deep (a scalar is depth 0), without recursion. */
export function nestsDeeperThan(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: [object, number][] = typeof value === 'object' && value !== null ? [[value, 1]] : [];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** A value as JSON text cut to `maxChars`, for error messages; never recurses past MAX_JSON_DEPTH. */
export function preview(value: unknown, maxChars: number): string {
  if (typeof value === 'number' || value === undefined) return String(value); // keeps NaN/Infinity readable
  if (nestsDeeperThan(value)) return `${Array.isArray(value) ? 'an array' : 'an object'} nested more than ${MAX_JSON_DEPTH} levels deep`;
  const json = JSON.stringify(value) ?? String(value);
  return json.length > maxChars ? `${json.slice(0, maxChars - 3)}...` : json;
}

/**
 * Whether a string in `value` (a value or a key, at any depth) holds U+0000, which PostgreSQL text and jsonb cannot
 * store. A walk without recursion and without building the JSON text (stringifying every frame to look for
 * it would cost the gateway CPU on every frame); `value` has passed nestsDeeperThan.
 */
export function holdsNul(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return true;
    } else if (Array.isArray(v)) {
      for (const child of v) stack.push(child);
    } else if (typeof v === 'object' && v !== null) {
      for (const key in v) {
        if (key.includes('\u0000')) return true;
        stack.push((v as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}
