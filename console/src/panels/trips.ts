import { ApiError, get } from '../api.js';
import { fmt, h } from '../dom.js';
import type { Ctx } from '../context.js';
import { decodePolyline, L, pinIcon } from '../map.js';
import type { DwEvent, NumericStat, Page, Point, ReportCard, Trip, Vehicle } from '../records.js';
import { REPORT_CARD } from '../../../db/trips/formulas.js';

/**
 * Penalty points per event kind (docs/concepts/trips-and-report-cards.md): 2 per hard brake, 1 per hard acceleration,
 * 1 per minute above 120 km/h.
 */
function reasons(trip: Trip, card: ReportCard | null): string[] {
  const s: Partial<Trip['stats']> = trip.stats ?? {};
  if (!card) return ['No report card yet: the trip is still open.'];
  if (card.grade === 'I') {
    const why = [];
    if (!s.substantial) why.push('not substantial (fewer than 5 messages or under 60 s)');
    if ((s.distance ?? 0) < 1000) why.push(`shorter than 1 km (${fmt.km(s.distance)})`);
    return [`Incomplete: ${why.join(' and ') || 'too little data'}.`];
  }
  const brakes = s.hardBrakeCount ?? 0;
  const accels = s.hardAccelCount ?? 0;
  // the points are spread over the trip's distance, but over no less than the floor (db/trips/formulas.ts)
  const km = Math.max((s.distance ?? 0) / 1000, REPORT_CARD.exposureFloorKm);
  const points = card.score == null ? null : (card.score * km) / REPORT_CARD.perKm;
  const speeding = points == null ? 0 : Math.max(0, Math.round(points - 2 * brakes - accels));
  return [
    `${brakes} hard brake${brakes === 1 ? '' : 's'} × 2 points`,
    `${accels} hard acceleration${accels === 1 ? '' : 's'} × 1 point`,
    `${speeding} minute${speeding === 1 ? '' : 's'} above 120 km/h × 1 point`,
    `= ${fmt.num(points, 1)} points over ${fmt.km(s.distance)}${(s.distance ?? 0) / 1000 < REPORT_CARD.exposureFloorKm ? `, counted as ${REPORT_CARD.exposureFloorKm} km` : ''} → ${fmt.num(card.score, 2)} per 10 km`,
  ];
}

const STAT_ROWS: [NumericStat, string, (v: number) => string][] = [
  ['distance', 'Distance', fmt.km], ['distanceByGPS', 'Distance by GPS', fmt.km], ['distanceByVSS', 'Distance by speed', fmt.km],
  ['duration', 'Duration', fmt.duration], ['averageSpeed', 'Average speed', (v) => `${fmt.num(v)} km/h`],
  ['averageMovingSpeed', 'Average moving speed', (v) => `${fmt.num(v)} km/h`], ['maxSpeed', 'Max speed', (v) => `${fmt.num(v)} km/h`],
  ['stopCount', 'Stops', String], ['hardBrakeCount', 'Hard brakes', (v) => (v == null ? '–' : String(v))],
  ['hardAccelCount', 'Hard accelerations', (v) => (v == null ? '–' : String(v))], ['averageLoad', 'Average load', (v) => `${fmt.num(v)} %`],
  ['fuelConsumed', 'Fuel used', (v) => (v == null ? '–' : `${fmt.num(v, 2)} L`)], ['fuelEconomy', 'Fuel economy', (v) => (v == null ? '–' : `${fmt.num(v)} mpg`)],
  ['messageCount', 'Messages', String], ['locationCount', 'Locations', String],
];

const kindOf = (type: string) => (type.startsWith('trip') ? 'trip' : type.startsWith('rule') ? 'rule' : type.startsWith('dtc') ? 'dtc' : '');

/**
 * Trips panel: a device's (or its vehicle's) trips, newest first with their grade; a chosen trip is drawn
 * from its preview with start and stop markers, with its statistics, report card and reasons, and its
 * events on a timeline.
 */
export function mountTripsPanel(root: HTMLElement, ctx: Ctx): void {
  const byVehicle = h('input', { type: 'checkbox' });
  const list = h('ul', { class: 'list', id: 'trip-list', 'aria-label': 'Trips' });
  const detail = h('div', { id: 'trip-detail', 'aria-live': 'polite' });
  const note = h('p', { class: 'muted' });
  const layer = L.layerGroup().addTo(ctx.map);
  const cards = new Map<string, ReportCard>();
  let chosen: string | null = null;
  let timer = 0;
  let seq = 0;

  root.append(
    h('h2', {}, 'Trips'),
    h('div', { class: 'row' }, h('label', { class: 'check' }, byVehicle, "All trips of the device's vehicle"),
      h('button', { type: 'button', class: 'secondary', onclick: () => void load() }, 'Refresh')),
    note, list, detail,
  );

  async function card(trip: Trip): Promise<ReportCard | null> {
    const cached = cards.get(trip.id);
    if (cached) return cached;
    if (trip.status !== 'completed') return null;
    const c = await get<{ reportCard: ReportCard }>(`/api/v1/trips/${trip.id}/report_cards/_current`).then((r) => r.reportCard).catch((err) => {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    });
    if (c) cards.set(trip.id, c);
    return c;
  }

  /**
   * The report cards of the completed trips not yet cached, from the device's (or vehicle's) report-card list over
   * their time span (a card is dated at its trip's stop): one request per refresh, more only past 100 cards. A
   * completed trip's card does not change, so a cached one is not asked for again.
   */
  async function fetchCards(owner: string, trips: Trip[]): Promise<void> {
    const span = trips.filter((t) => t.status === 'completed' && !cards.has(t.id));
    if (!span.length) return;
    const missing = new Set(span.map((t) => t.id));
    const since = Math.min(...span.map((t) => Date.parse(t.start))) - 1;
    const until = Math.max(...span.map((t) => Date.parse(t.stop ?? t.start)));
    let url: string | undefined = `${owner}/report_cards?since=${since}&until=${until}&limit=100`;
    while (url && missing.size) {
      const page: { reportCards: ReportCard[] } & Page = await get(url);
      for (const c of page.reportCards) if (missing.delete(c.tripId)) cards.set(c.tripId, c);
      url = page.meta.pagination.links?.prior;
    }
  }

  async function load(): Promise<void> {
    window.clearTimeout(timer);
    const n = ++seq;
    const deviceId = ctx.selected();
    if (!deviceId) { list.replaceChildren(); note.textContent = 'Pick a device.'; return; }
    let owner = `/api/v1/devices/${deviceId}`;
    if (byVehicle.checked) {
      const v = (await get<{ vehicle: Vehicle | null }>(`/api/v1/devices/${deviceId}/vehicles/_latest`)).vehicle;
      if (!v?.id) { note.textContent = 'The device has reported no vehicle yet.'; list.replaceChildren(); return; }
      owner = `/api/v1/vehicles/${v.id}`;
    }
    const trips = (await get<{ trips: Trip[] }>(`${owner}/trips?limit=20`)).trips;
    await fetchCards(owner, trips);
    const graded = trips.map((t) => ({ t, c: cards.get(t.id) ?? null }));
    if (n !== seq) return;
    note.textContent = trips.length ? `${trips.length} trip${trips.length === 1 ? '' : 's'}, newest first.` : 'No trips yet. Start a run in Runs.';
    list.replaceChildren(...graded.map(({ t, c }) => h('li', {},
      h('button', { type: 'button', class: 'item', 'aria-pressed': String(t.id === chosen), 'data-trip': t.id, onclick: () => void show(t.id) },
        h('span', { class: `grade grade-${c?.grade ?? 'none'}`, title: 'Report card grade' }, c?.grade ?? '…'), ' ',
        `${fmt.time(t.start)} · ${fmt.km(t.stats?.distance)} · ${fmt.duration(t.stats?.duration)}`,
        t.status !== 'completed' ? h('span', { class: 'badge' }, ' in progress') : ''))));
    if (chosen && trips.some((t) => t.id === chosen)) {
      const t = trips.find((x) => x.id === chosen);
      if (t && (t.status !== 'completed' || !detail.dataset.final)) void show(chosen, false);
    }
    if (ctx.visible('trips')) timer = window.setTimeout(() => void load().catch(() => undefined), 5000);
  }

  async function show(tripId: string, fit = true): Promise<void> {
    chosen = tripId;
    for (const b of list.querySelectorAll<HTMLButtonElement>('button.item')) b.setAttribute('aria-pressed', String(b.dataset.trip === tripId));
    const { trip } = await get<{ trip: Trip }>(`/api/v1/trips/${tripId}`);
    const [c, events] = await Promise.all([card(trip), get<{ events: DwEvent[] }>(`${trip.links.events}&limit=100`).then((r) => r.events).catch((): DwEvent[] => [])]);
    if (chosen !== tripId) return;
    layer.clearLayers();
    const pts = trip.preview ? decodePolyline(trip.preview) : [];
    if (pts.length > 1) {
      const line = L.polyline(pts, { color: '#0b57a4', weight: 5, opacity: .9, className: 'dw-trip' }).addTo(layer);
      if (fit) ctx.fit(line.getBounds());
    }
    const at = (p: Point | null) => (p?.coordinates ? [p.coordinates[1], p.coordinates[0]] as [number, number] : null);
    const start = at(trip.startPoint);
    const stop = at(trip.stopPoint);
    if (start) L.marker(start, { icon: pinIcon('start'), title: 'Trip start', alt: 'Trip start', keyboard: false, interactive: false }).addTo(layer);
    if (stop && trip.status === 'completed') L.marker(stop, { icon: pinIcon('stop'), title: 'Trip end', alt: 'Trip end', keyboard: false, interactive: false }).addTo(layer);
    detail.dataset.final = trip.status === 'completed' && c ? '1' : '';
    detail.replaceChildren(
      h('h3', {}, `Trip of ${fmt.time(trip.start)}`),
      h('p', { class: 'muted' }, `${trip.status} · started by ${trip.meta?.startReason ?? '–'}${trip.meta?.endReason ? `, ended by ${trip.meta.endReason}` : ''}`),
      h('div', { class: 'report', id: 'trip-grade' },
        h('h3', {}, 'Report card ', h('span', { class: `grade grade-${c?.grade ?? 'none'}` }, c?.grade ?? '–')),
        h('ul', {}, reasons(trip, c).map((r) => h('li', {}, r)))),
      h('h3', {}, 'Events'),
      timeline(trip, events),
      h('h3', {}, 'Statistics'),
      h('table', {}, h('tbody', {}, STAT_ROWS.map(([k, label, f]) => {
        const v = trip.stats?.[k];
        return h('tr', {}, h('th', { scope: 'row' }, label), h('td', { class: 'num' }, v == null ? '–' : f(v)));
      }))),
    );
  }

  function timeline(trip: Trip, events: DwEvent[]): HTMLElement {
    const t0 = Date.parse(trip.start);
    const t1 = trip.stop ? Date.parse(trip.stop) : Math.max(t0 + 1, ...events.map((e) => Date.parse(e.timestamp)));
    const pos = (ts: string) => `${Math.max(0, Math.min(100, (100 * (Date.parse(ts) - t0)) / Math.max(1, t1 - t0)))}%`;
    const sorted = [...events].sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp));
    return h('div', {},
      h('div', { class: 'timeline', role: 'img', 'aria-label': `Timeline of ${sorted.length} events from start to end of the trip` },
        sorted.map((e) => h('span', { class: `tick ${kindOf(e.eventType)}`, style: `left:${pos(e.timestamp)}`, title: `${e.eventType} at ${fmt.time(e.timestamp)}` })),
        h('span', { class: 'end', style: 'left:0' }, new Date(t0).toLocaleTimeString()),
        h('span', { class: 'end', style: 'right:0' }, new Date(t1).toLocaleTimeString())),
      h('ol', { class: 'list events' }, sorted.map((e) => h('li', {}, h('strong', {}, e.eventType), ` ${new Date(e.timestamp).toLocaleTimeString()}`,
        e.meta?.rule?.name ? ` · ${e.meta.rule.name}` : ''))));
  }

  byVehicle.addEventListener('change', () => void load());
  let deviceShown = ctx.selected();
  ctx.onSelect((id) => {
    if (id === deviceShown) return;
    deviceShown = id;
    chosen = null;
    layer.clearLayers();
    detail.replaceChildren();
    if (ctx.visible('trips')) void load();
  });
  ctx.onShow((p) => { if (p === 'trips') void load(); else window.clearTimeout(timer); });
}
