/** A small element builder: attributes (on* are listeners), then children (strings become text). */
type Child = Node | string | number | null | undefined | false;
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K, attrs: Record<string, unknown> = {}, ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else if (k === 'class') el.className = String(v);
    else if (k in el && typeof v !== 'string') (el as unknown as Record<string, unknown>)[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'object' ? c : String(c));
  return el;
}

export const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

/** A labelled form field: the label's `for` names the control, so every input has an accessible name. */
export function field(label: string, control: HTMLElement, grow = false): HTMLElement {
  if (!control.id) control.id = `f-${Math.random().toString(36).slice(2, 9)}`;
  return h('div', { class: grow ? 'field grow' : 'field' }, h('label', { for: control.id }, label), control);
}

export const fmt = {
  km: (m: number | null | undefined) => (m == null ? '–' : m >= 1000 ? `${(m / 1000).toFixed(2)} km` : `${Math.round(m)} m`),
  duration: (ms: number | null | undefined) => {
    if (ms == null) return '–';
    const s = Math.round(ms / 1000);
    return s >= 3600 ? `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min` : s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
  },
  time: (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '–'),
  num: (v: number | null | undefined, digits = 1) => (v == null ? '–' : Number.isInteger(v) ? String(v) : v.toFixed(digits)),
};
