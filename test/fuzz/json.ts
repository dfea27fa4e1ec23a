/**
 * JSON text of a value however deep it nests, without recursion: hostile bodies nest thousands of
 * levels, past what JSON.stringify's recursion survives inside a test worker.
 */
export function stringifyDeep(value: unknown): string {
  const out: string[] = [];
  const todo: unknown[] = [value];
  const TEXT = Symbol('text');
  while (todo.length) {
    const v = todo.pop();
    if (typeof v === 'object' && v !== null && TEXT in v) { out.push((v as { [TEXT]: string })[TEXT]); continue; }
    const text = (s: string) => ({ [TEXT]: s });
    if (Array.isArray(v)) {
      todo.push(text(']'));
      for (let i = v.length - 1; i >= 0; i--) { todo.push(v[i] === undefined ? null : v[i]); if (i > 0) todo.push(text(',')); }
      todo.push(text('['));
    } else if (typeof v === 'object' && v !== null) {
      const entries = Object.entries(v).filter(([, c]) => c !== undefined);
      todo.push(text('}'));
      for (let i = entries.length - 1; i >= 0; i--) {
        todo.push(entries[i][1]);
        todo.push(text(`${i > 0 ? ',' : ''}${JSON.stringify(entries[i][0])}:`));
      }
      todo.push(text('{'));
    } else {
      out.push(JSON.stringify(v) ?? 'null');
    }
  }
  return out.join('');
}
