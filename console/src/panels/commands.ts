import { api, ApiError, get } from '../api.js';
import { field, fmt, h } from '../dom.js';
import type { Ctx } from '../context.js';
import type { Command } from '../records.js';
import { CONSOLE_COMMAND_TYPES, FINAL_COMMAND_STATES } from '../command-types.js';

/** ms between reads of a command that is not final yet. */
const POLL_MS = 1000;
const RECENT = 5;
const message = (err: unknown) => (err instanceof ApiError && err.body?.message ? err.body.message : (err as Error).message);
const isFinal = (c: Command) => FINAL_COMMAND_STATES.includes(c.state);
const json = (v: unknown) => JSON.stringify(v, null, 1).replace(/\n\s*/g, ' ');

export interface CommandBox {
  /** Shows a device's commands (null: none selected); the command followed is dropped when it is another device's. */
  show(deviceId: string | null): void;
}

/**
 * The device panel's command box: a type, its payload (seconds, or a JSON object), Send; the command followed until it
 * is final, with its reply and a Cancel while queued; the device's last few commands. Every text from the API is
 * set as text, never parsed as markup (h() appends strings as text nodes).
 */
export function mountCommandBox(root: HTMLElement, ctx: Ctx, changed: () => void): CommandBox {
  const type = h('select', { id: 'command-type' }, CONSOLE_COMMAND_TYPES.map((t) => h('option', { value: t.name }, t.name)));
  const hint = h('p', { class: 'muted', id: 'command-hint' });
  const seconds = h('input', { type: 'number', min: 1, max: 3600, step: 1, value: '10', inputmode: 'numeric' });
  const payload = h('textarea', { rows: 3, spellcheck: false, placeholder: '{"key": "value"}' });
  const secondsField = field('Interval (seconds, 1–3600)', seconds, true);
  const payloadField = field('Payload (a JSON object)', payload, true);
  const send = h('button', { type: 'submit' }, 'Send');
  const note = h('p', { class: 'error', role: 'alert', id: 'command-error' });
  const current = h('div', { id: 'command-current', 'aria-live': 'polite' });
  const recent = h('ul', { class: 'list', id: 'command-list', 'aria-label': 'Recent commands' });
  type.setAttribute('aria-describedby', hint.id);
  const form = h('form', { novalidate: true, 'aria-label': 'Send a command' },
    h('div', { class: 'row' }, field('Command', type, true), send), hint, secondsField, payloadField, note);
  root.classList.add('commands');
  root.append(h('h3', {}, 'Commands'), form, current, h('h4', {}, `Last ${RECENT} commands`), recent);

  let deviceId: string | null = null;
  let followed: Command | null = null;
  let timer = 0;

  function showType(): void {
    const t = CONSOLE_COMMAND_TYPES.find((x) => x.name === type.value) ?? CONSOLE_COMMAND_TYPES[0];
    hint.textContent = t.hint;
    secondsField.hidden = t.payload !== 'seconds';
    payloadField.hidden = t.payload !== 'json';
  }

  /** The body to POST, or a reason in words when the JSON field does not parse (then nothing is sent). */
  function body(): { command: { type: string; payload?: unknown } } | string {
    const t = CONSOLE_COMMAND_TYPES.find((x) => x.name === type.value)!;
    if (t.payload === 'seconds') {
      // Sent as typed: the API answers a value out of range (or none) with its own 400 message.
      return { command: { type: t.name, payload: { seconds: seconds.value === '' ? null : Number(seconds.value) } } };
    }
    if (t.payload === 'json' && payload.value.trim()) {
      try {
        return { command: { type: t.name, payload: JSON.parse(payload.value) } };
      } catch (err) {
        return `The payload is not valid JSON (${(err as Error).message}); nothing was sent.`;
      }
    }
    return { command: { type: t.name } };
  }

  async function onSend(ev: Event): Promise<void> {
    ev.preventDefault();
    note.textContent = '';
    if (!deviceId) { note.textContent = 'Pick a device first.'; return; }
    const b = body();
    if (typeof b === 'string') { note.textContent = b; return; }
    send.disabled = true;
    try {
      const { command } = await api<{ command: Command }>('POST', `/api/v1/devices/${deviceId}/commands`, b);
      follow(command);
      void loadRecent();
    } catch (err) {
      note.textContent = `Not sent: ${message(err)}`;
    } finally {
      send.disabled = false;
    }
  }

  async function cancel(c: Command): Promise<void> {
    note.textContent = '';
    try {
      follow((await api<{ command: Command }>('DELETE', `/api/v1/commands/${c.id}`)).command);
    } catch (err) {
      note.textContent = `Not cancelled: ${message(err)}`;
      void poll();
    }
    void loadRecent();
  }

  /** Shows a command and reads it again every second until it is final (only while the device panel shows). */
  function follow(c: Command): void {
    const moved = followed?.id !== c.id || followed.state !== c.state;
    followed = c;
    window.clearTimeout(timer);
    renderFollowed();
    if (moved) changed();
    if (!isFinal(c) && ctx.visible('devices')) timer = window.setTimeout(() => void poll(), POLL_MS);
  }

  async function poll(): Promise<void> {
    const c = followed;
    if (!c) return;
    try {
      const { command } = await get<{ command: Command }>(`/api/v1/commands/${c.id}`);
      if (followed?.id !== c.id) return;
      const moved = command.state !== c.state;
      follow(command);
      if (moved) void loadRecent();
    } catch (err) {
      note.textContent = message(err);
      timer = window.setTimeout(() => void poll(), POLL_MS * 5);
    }
  }

  function renderFollowed(): void {
    const c = followed;
    if (!c) { current.replaceChildren(); return; }
    const r = c.response;
    const item = (k: string, v: Node | string) => [h('dt', {}, k), h('dd', {}, v)];
    current.replaceChildren(h('dl', { class: 'pairs', 'aria-label': 'The command followed' },
      item('Command', c.type + (c.payload ? ` ${json(c.payload)}` : '')),
      item('State', h('span', { class: `state ${c.state}`, 'data-state': c.state }, c.state)),
      item('Sent', c.sentAt ? fmt.time(c.sentAt) : 'not yet'),
      c.deliveredAt ? item('Delivered', fmt.time(c.deliveredAt)) : [],
      c.respondedAt ? item('Answered', fmt.time(c.respondedAt)) : [],
      r?.ok ? item('Result', h('code', { class: 'result' }, json(r.result ?? {}))) : [],
      r && !r.ok ? item('Error', h('span', { class: 'error' }, r.error ?? 'the device did not carry it out')) : [],
      isFinal(c) ? [] : item('Expires', fmt.time(c.expiresAt)),
    ), c.state === 'queued' ? h('button', { type: 'button', class: 'danger', onclick: () => void cancel(c) }, 'Cancel command') : '');
  }

  async function loadRecent(): Promise<void> {
    const id = deviceId;
    if (!id) { recent.replaceChildren(); return; }
    const { commands } = await get<{ commands: Command[] }>(`/api/v1/devices/${id}/commands?limit=${RECENT}`)
      .catch((err: unknown) => { note.textContent = message(err); return { commands: [] as Command[] }; });
    if (id !== deviceId) return;
    recent.replaceChildren(...(commands.length
      ? commands.map((c) => h('li', { 'data-state': c.state },
        h('button', { type: 'button', class: 'item', 'aria-pressed': String(c.id === followed?.id), onclick: () => follow(c) },
          h('strong', {}, c.type), ' ', h('span', { class: `state ${c.state}` }, c.state), ' ', h('span', { class: 'muted when' }, fmt.time(c.createdAt)))))
      : [h('li', { class: 'muted' }, 'None yet.')]));
  }

  type.addEventListener('change', showType);
  form.addEventListener('submit', (e) => void onSend(e));
  ctx.onShow((p) => {
    if (p !== 'devices') return;
    void loadRecent();
    if (followed && !isFinal(followed)) void poll();
  });
  showType();

  return {
    show(id) {
      if (id === deviceId) return;
      deviceId = id;
      note.textContent = '';
      if (followed && followed.deviceId !== id) {
        followed = null;
        window.clearTimeout(timer);
        renderFollowed();
      }
      form.hidden = !id;
      void loadRecent();
    },
  };
}
