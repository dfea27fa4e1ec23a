import { api, ApiError, get } from '../api.js';
import { field, fmt, h } from '../dom.js';
import type { Ctx } from '../context.js';
import type { DwEvent, Notification, Rule, Subscription } from '../records.js';
import { DrawTool, type Shape } from '../draw.js';
import { L } from '../map.js';

const message = (err: unknown) => (err instanceof ApiError && err.body?.message ? err.body.message : (err as Error).message);

/**
 * Rules & events panel: draw a radius or polygon rule on the map (or type it), the device's rules drawn and
 * deletable, rule-enter/leave events appearing live, and a subscription's notification log.
 */
export function mountRulesPanel(root: HTMLElement, ctx: Ctx): void {
  const name = h('input', { value: 'Geofence', maxlength: 200 });
  const kindRadius = h('input', { type: 'radio', name: 'rule-kind', value: 'radius', checked: true });
  const kindPolygon = h('input', { type: 'radio', name: 'rule-kind', value: 'polygon' });
  const lat = h('input', { type: 'number', step: 'any' });
  const lon = h('input', { type: 'number', step: 'any' });
  const radius = h('input', { type: 'number', step: 1, min: 1 });
  const radiusFields = h('div', { class: 'row' }, field('Centre latitude', lat, true), field('Centre longitude', lon, true), field('Radius (m)', radius));
  const polygonInfo = h('p', { class: 'muted', hidden: true }, 'No polygon drawn yet.');
  const drawBtn = h('button', { type: 'button', class: 'secondary' }, 'Draw on map');
  const finishBtn = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Finish polygon');
  const createBtn = h('button', { type: 'button', disabled: true }, 'Create rule');
  const hint = h('p', { class: 'muted', 'aria-live': 'polite' });
  const note = h('p', { class: 'error', role: 'alert' });
  const rulesList = h('ul', { class: 'list', id: 'rule-list', 'aria-label': 'Rules of the device' });
  const eventsList = h('ol', { class: 'list events', id: 'rule-events', 'aria-label': 'Rule events, newest first', 'aria-live': 'polite' });
  const subSelect = h('select', {});
  const subUrl = h('input', { type: 'url', placeholder: 'https://example.com/hook' });
  const subRule = h('select', {});
  const notifications = h('div', { id: 'notifications' });
  const drawLayer = L.layerGroup().addTo(ctx.map);
  const rulesLayer = L.layerGroup().addTo(ctx.map);
  const seen = new Set<string>();
  let rules: Rule[] = [];
  let timer = 0;

  const kind = () => (kindPolygon.checked ? 'polygon' : 'radius');
  const tool = new DrawTool(ctx.map, drawLayer, (shape, done) => {
    if (shape?.type === 'radius') {
      lat.value = String(shape.lat); lon.value = String(shape.lon); radius.value = String(shape.radius);
    }
    if (shape?.type === 'polygon') polygonInfo.textContent = `Polygon of ${shape.coordinates.length - 1} vertices${done ? '' : ' (click the first vertex or Finish to close)'}.`;
    createBtn.disabled = !shape || (shape.type === 'polygon' && !done) || !!(tool?.drawing && shape.type === 'radius');
    if (done) hint.textContent = 'Shape ready: create the rule.';
  });

  root.append(
    h('h2', {}, 'New rule'),
    h('div', { class: 'row' }, field('Rule name', name, true)),
    h('fieldset', { class: 'row' }, h('legend', {}, 'Boundary'),
      h('label', { class: 'check' }, kindRadius, 'Radius'), h('label', { class: 'check' }, kindPolygon, 'Polygon')),
    radiusFields, polygonInfo,
    h('div', { class: 'row' }, drawBtn, finishBtn, createBtn),
    hint, note,
    h('h2', {}, 'Rules of the device'), rulesList,
    h('h2', {}, 'Rule events (live)'), eventsList,
    h('h2', {}, 'Notifications'),
    h('div', { class: 'row' }, field('Subscription', subSelect, true)),
    notifications,
    h('details', {}, h('summary', {}, 'Subscribe to a rule\'s events'),
      h('div', { class: 'row' }, field('Rule', subRule, true)),
      h('div', { class: 'row' }, field('Callback URL', subUrl, true),
        h('button', { type: 'button', class: 'secondary', onclick: () => void subscribe() }, 'Subscribe'))),
  );

  const setKind = () => {
    radiusFields.hidden = kind() !== 'radius';
    polygonInfo.hidden = kind() !== 'polygon';
    tool.cancel();
    createBtn.disabled = true;
  };
  kindRadius.addEventListener('change', setKind);
  kindPolygon.addEventListener('change', setKind);
  drawBtn.addEventListener('click', () => {
    tool.start(kind());
    finishBtn.hidden = kind() !== 'polygon';
    hint.textContent = kind() === 'radius'
      ? 'Click the centre on the map, move out, click again to set the radius. Escape cancels.'
      : 'Click the vertices on the map; click the first one again or Finish to close. Escape cancels.';
  });
  finishBtn.addEventListener('click', () => { if (!tool.finish()) hint.textContent = 'A polygon needs at least 3 vertices.'; });
  // Typed values (keyboard users) are a shape as much as a drawn one.
  for (const input of [lat, lon, radius]) input.addEventListener('input', () => {
    const s: Shape = { type: 'radius', lat: Number(lat.value), lon: Number(lon.value), radius: Number(radius.value) };
    const ok = lat.value !== '' && lon.value !== '' && Number.isFinite(s.lat) && Number.isFinite(s.lon) && s.radius > 0;
    if (ok) tool.set(s);
    createBtn.disabled = !ok;
  });
  createBtn.addEventListener('click', () => void create());

  async function create(): Promise<void> {
    const deviceId = ctx.selected();
    const shape = tool.shape;
    note.textContent = '';
    if (!deviceId || !shape) { note.textContent = 'Pick a device and draw a shape first.'; return; }
    const boundary = shape.type === 'radius'
      ? { type: 'radius', lat: shape.lat, lon: shape.lon, radius: shape.radius }
      : { type: 'polygon', coordinates: [shape.coordinates] };
    try {
      const { rule } = await api<{ rule: Rule }>('POST', `/api/v1/devices/${deviceId}/rules`, { rule: { name: name.value.trim() || 'Geofence', boundaries: [boundary] } });
      tool.cancel();
      hint.textContent = `Rule "${rule.name}" created; its events appear below as the device enters and leaves it.`;
      await loadRules();
    } catch (err) {
      note.textContent = `Could not create the rule: ${message(err)}`;
    }
  }

  async function loadRules(): Promise<void> {
    const deviceId = ctx.selected();
    rulesLayer.clearLayers();
    if (!deviceId) { rulesList.replaceChildren(); return; }
    const list = (await get<{ rules: Rule[] }>(`/api/v1/devices/${deviceId}/rules?limit=100`)).rules;
    rules = await Promise.all(list.map(async (r) => (await get<{ rule: Rule }>(`/api/v1/rules/${r.id}`)).rule));
    if (deviceId !== ctx.selected()) return;
    for (const r of rules) for (const b of r.boundaries ?? []) {
      const style = { color: '#7a3db8', weight: 2, fillOpacity: .08, dashArray: '4 4', className: 'dw-rule' };
      if (b.type === 'radius') L.circle([b.lat, b.lon], { ...style, radius: b.radius }).bindTooltip(r.name).addTo(rulesLayer);
      if (b.type === 'polygon') L.polygon(b.coordinates.map((ring) => ring.map(([x, y]) => [y, x] as [number, number])), style).bindTooltip(r.name).addTo(rulesLayer);
    }
    rulesList.replaceChildren(...(rules.length ? rules.map((r) => h('li', {},
      h('span', { style: 'flex:1' }, h('strong', {}, r.name), ' ', h('span', { class: 'muted' },
        (r.boundaries ?? []).map((b) => (b.type === 'radius' ? `radius ${b.radius} m` : b.type)).join(', '),
        r.evaluated ? (r.covered ? ' · inside' : ' · outside') : ' · not evaluated yet')),
      h('button', { type: 'button', class: 'danger', 'aria-label': `Delete rule ${r.name}`, onclick: () => void remove(r) }, 'Delete')))
      : [h('li', { class: 'muted' }, 'No rules yet.')]));
    subRule.replaceChildren(...rules.map((r) => h('option', { value: r.id }, r.name)));
  }

  async function remove(rule: Rule): Promise<void> {
    try {
      await api('DELETE', `/api/v1/rules/${rule.id}`);
      await loadRules();
    } catch (err) {
      note.textContent = `Could not delete the rule: ${message(err)}`;
    }
  }

  async function loadEvents(): Promise<void> {
    const deviceId = ctx.selected();
    if (!deviceId) return;
    const events = (await get<{ events: DwEvent[] }>(`/api/v1/devices/${deviceId}/events?type=rule-*&limit=20`)).events;
    if (deviceId !== ctx.selected()) return;
    const fresh = events.some((e) => !seen.has(e.id));
    if (!fresh && eventsList.childElementCount) return;
    eventsList.replaceChildren(...(events.length ? events.map((e) => {
      const isNew = !seen.has(e.id) && seen.size > 0;
      seen.add(e.id);
      return h('li', { class: isNew ? 'fresh' : '', 'data-event': e.eventType },
        h('strong', {}, e.eventType), ` ${e.meta?.rule?.name ?? ''} · ${fmt.time(e.timestamp)}`, e.meta?.firstEval ? h('span', { class: 'badge' }, 'first evaluation') : '');
    }) : [h('li', { class: 'muted' }, 'No rule events yet.')]));
    if (fresh) void loadRules(); // covered/evaluated changed
  }

  async function loadSubscriptions(): Promise<void> {
    const deviceId = ctx.selected();
    if (!deviceId) return;
    const subs = (await get<{ subscriptions?: Subscription[] }>(`/api/v1/devices/${deviceId}/subscriptions?limit=100`)).subscriptions ?? [];
    const keep = subSelect.value;
    subSelect.replaceChildren(...(subs.length ? subs.map((s) => h('option', { value: s.id }, `${s.eventType} → ${s.url}`)) : [h('option', { value: '' }, 'No subscriptions')]));
    if (subs.some((s) => s.id === keep)) subSelect.value = keep;
    await loadNotifications();
  }

  async function loadNotifications(): Promise<void> {
    if (!subSelect.value) { notifications.replaceChildren(); return; }
    const list = (await get<{ notifications: Notification[] }>(`/api/v1/subscriptions/${subSelect.value}/notifications?limit=20`)).notifications;
    notifications.replaceChildren(list.length ? h('table', {},
      h('caption', { class: 'muted' }, 'Notification log, newest first'),
      h('thead', {}, h('tr', {}, ...['Event', 'Time', 'State', 'Attempts', 'Response'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, list.map((n) => h('tr', {}, h('td', {}, n.eventType), h('td', {}, fmt.time(n.eventTimestamp)),
        h('td', {}, n.state), h('td', { class: 'num' }, String(n.attempts ?? '–')), h('td', { class: 'num' }, n.responseCode == null ? '–' : String(n.responseCode))))))
      : h('p', { class: 'muted' }, 'No notifications yet.'));
  }

  async function subscribe(): Promise<void> {
    const deviceId = ctx.selected();
    note.textContent = '';
    if (!deviceId || !subRule.value) { note.textContent = 'Create a rule first.'; return; }
    try {
      const { subscription } = await api<{ subscription: Subscription | null }>('POST', `/api/v1/devices/${deviceId}/subscriptions`,
        { subscription: { eventType: 'rule-*', url: subUrl.value.trim(), object: { id: subRule.value, type: 'rule' } } });
      await loadSubscriptions();
      if (subscription?.id) { subSelect.value = subscription.id; await loadNotifications(); }
    } catch (err) {
      note.textContent = `Could not subscribe: ${message(err)}`;
    }
  }

  subSelect.addEventListener('change', () => void loadNotifications().catch((e) => { note.textContent = message(e); }));

  const poll = async () => {
    window.clearTimeout(timer);
    if (!ctx.visible('rules')) return;
    await Promise.all([loadEvents(), loadNotifications()]).catch((e) => { note.textContent = message(e); });
    timer = window.setTimeout(() => void poll(), 2000);
  };
  const reload = () => {
    seen.clear();
    eventsList.replaceChildren();
    void Promise.all([loadRules(), loadSubscriptions()]).then(poll).catch((e) => { note.textContent = message(e); });
  };
  ctx.onSelect(() => { if (ctx.visible('rules')) reload(); else rulesLayer.clearLayers(); });
  ctx.onShow((p) => { if (p === 'rules') reload(); else { window.clearTimeout(timer); tool.cancel(); } });
}
