import { api, ApiError, get } from '../api.js';
import { field, fmt, h } from '../dom.js';
import type { Ctx } from '../context.js';
import type { DwEvent, Notification, Rule, Subscription } from '../records.js';
import { L } from '../map.js';
import { boundaryLayer, textContent } from '../rule-layers.js';
import { boundaryText, optionTexts, secondsText } from '../rule-text.js';
import { mountRuleForm } from './rule-form.js';

const message = (err: unknown) => (err instanceof ApiError && err.body?.message ? err.body.message : (err as Error).message);

/**
 * Rules & events panel: the new-rule form (rule-form.ts), the device's rules drawn on the map and listed with
 * their settings, deletable, rule-enter/leave events appearing live, and a subscription's notification log.
 */
export function mountRulesPanel(root: HTMLElement, ctx: Ctx): void {
  const note = h('p', { class: 'error', role: 'alert' });
  const rulesList = h('ul', { class: 'list', id: 'rule-list', 'aria-label': 'Rules of the device' });
  const eventsList = h('ol', { class: 'list events', id: 'rule-events', 'aria-label': 'Rule events, newest first', 'aria-live': 'polite' });
  const subSelect = h('select', {});
  const subUrl = h('input', { type: 'url', placeholder: 'https://example.com/hook' });
  const subRule = h('select', {});
  const notifications = h('div', { id: 'notifications' });
  const rulesLayer = L.layerGroup().addTo(ctx.map);
  const seen = new Set<string>();
  let rules: Rule[] = [];
  let timer = 0;

  const form = mountRuleForm(root, ctx, message, () => loadRules());
  root.append(
    note,
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

  /** One list item: the name, the boundaries and state, and each option the rule sets, all as text. */
  const ruleItem = (r: Rule) => h('li', { 'data-rule': r.id },
    h('span', { class: 'rule-text' }, h('strong', {}, r.name), ' ', h('span', { class: 'muted' },
      (r.boundaries ?? []).map(boundaryText).join(', '),
      r.evaluated ? (r.covered ? ' · inside' : ' · outside') : ' · not evaluated yet'),
    ...optionTexts(r).map((t) => h('span', { class: 'rule-option' }, t))),
    h('button', { type: 'button', class: 'danger', 'aria-label': `Delete rule ${r.name}`, onclick: () => void remove(r) }, 'Delete'));

  async function loadRules(): Promise<void> {
    const deviceId = ctx.selected();
    rulesLayer.clearLayers();
    if (!deviceId) { rulesList.replaceChildren(); return; }
    const list = (await get<{ rules: Rule[] }>(`/api/v1/devices/${deviceId}/rules?limit=100`)).rules;
    rules = await Promise.all(list.map(async (r) => (await get<{ rule: Rule }>(`/api/v1/rules/${r.id}`)).rule));
    if (deviceId !== ctx.selected()) return;
    rulesLayer.clearLayers();
    for (const r of rules) for (const b of r.boundaries ?? []) boundaryLayer(ctx.map, b)?.bindTooltip(textContent(r.name)).addTo(rulesLayer);
    rulesList.replaceChildren(...(rules.length ? rules.map(ruleItem) : [h('li', { class: 'muted' }, 'No rules yet.')]));
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
        h('strong', {}, e.eventType), ` ${e.meta?.rule?.name ?? ''} · ${fmt.time(e.timestamp)}`, e.meta?.firstEval ? h('span', { class: 'badge' }, 'first evaluation') : '',
        e.meta?.dwellSeconds ? h('span', { class: 'badge' }, `after ${secondsText(e.meta.dwellSeconds)} dwell`) : '',
        e.meta?.crossing ? h('span', { class: 'badge' }, 'crossing between fixes') : '');
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
  ctx.onShow((p) => { if (p === 'rules') reload(); else { window.clearTimeout(timer); form.cancel(); } });
}
