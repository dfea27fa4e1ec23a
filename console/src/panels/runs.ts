import { api, ApiError, get } from '../api.js';
import { field, fmt, h } from '../dom.js';
import type { Ctx } from '../context.js';
import type { Dummy, Route, Run } from '../records.js';
import { decodePolyline, L } from '../map.js';

const VIN_CHARS = 'ABCDEFGHJKLMNPRSTUVWXYZ0123456789'; // A–Z without I, O, Q, and digits
export const randomVin = () => 'VV' + Array.from(crypto.getRandomValues(new Uint8Array(15)), (b) => VIN_CHARS[b % VIN_CHARS.length]).join('');
const message = (err: unknown) => (err instanceof ApiError && err.body?.message ? err.body.message : (err as Error).message);

/**
 * Runs panel: the application's dummies, the routes (stored and imported, with drag-and-drop import), and a
 * run started with a speed factor and repeat, stopped, and followed live (state, progress, frames, distance).
 */
export function mountRunsPanel(root: HTMLElement, ctx: Ctx): void {
  const dummySelect = h('select', {});
  const dummyName = h('input', { placeholder: 'QA car', maxlength: 100 });
  const routeSelect = h('select', {});
  const speed = h('input', { type: 'number', min: 1, max: 1000, step: 1, value: '20', inputmode: 'numeric' });
  const repeat = h('input', { type: 'checkbox' });
  const vin = h('input', { value: randomVin(), spellcheck: false, maxlength: 17 });
  const startBtn = h('button', { type: 'button' }, 'Start run');
  const stopBtn = h('button', { type: 'button', class: 'danger', disabled: true }, 'Stop run');
  const status = h('div', { id: 'run-status', 'aria-live': 'polite' });
  const progress = h('progress', { max: 100, value: 0, 'aria-label': 'Run progress' });
  const note = h('p', { class: 'error', role: 'alert' });
  const fileInput = h('input', { type: 'file', accept: '.gpx,.geojson,.json,.txt,.polyline' });
  const drop = h('div', { class: 'drop' }, h('p', {}, 'Drop a GPX, GeoJSON or encoded-polyline file here to import a route'), field('…or choose a file', fileInput));
  const routeLayer = L.layerGroup().addTo(ctx.map);
  let dummies: Dummy[] = [];
  let routes: Route[] = [];
  let timer = 0;

  root.append(
    h('h2', {}, 'Dummy'),
    h('div', { class: 'row' }, field('Dummy', dummySelect, true)),
    h('div', { class: 'row' }, field('New dummy name', dummyName, true), h('button', { type: 'button', class: 'secondary', onclick: () => void createDummy() }, 'Create dummy')),
    h('h2', {}, 'Route'),
    h('div', { class: 'row' }, field('Route', routeSelect, true)),
    drop,
    h('h2', {}, 'Run'),
    h('div', { class: 'row' }, field('Speed factor (1–1000)', speed), field('VIN (made up)', vin, true)),
    h('div', { class: 'row' }, h('label', { class: 'check' }, repeat, 'Repeat until stopped'), startBtn, stopBtn),
    note, progress, status,
  );

  const dummy = () => dummies.find((d) => d.id === dummySelect.value);
  const route = () => routes.find((r) => r.id === routeSelect.value);

  async function loadDummies(selectId?: string): Promise<void> {
    dummies = (await get<{ dummies: Dummy[] }>('/api/v1/dummies?limit=100')).dummies;
    dummySelect.replaceChildren(...(dummies.length ? dummies.map((d) => h('option', { value: d.id }, d.name)) : [h('option', { value: '' }, 'No dummy yet: create one')]));
    const selected = selectId ?? dummies.find((d) => d.deviceId === ctx.selected())?.id;
    if (selected) dummySelect.value = selected;
    void watch();
  }

  async function loadRoutes(selectId?: string): Promise<void> {
    const keep = selectId ?? routeSelect.value;
    routes = (await get<{ routes: Route[] }>('/api/v1/routes?limit=100')).routes;
    routeSelect.replaceChildren(...routes.map((r) => h('option', { value: r.id }, `${r.name} (${fmt.km(r.distanceByGPS)}, ${fmt.duration(r.duration)})`)));
    if (keep && routes.some((r) => r.id === keep)) routeSelect.value = keep;
    showRoute();
  }

  function showRoute(): void {
    routeLayer.clearLayers();
    const r = route();
    if (!r?.preview || !ctx.visible('runs')) return;
    const line = L.polyline(decodePolyline(r.preview), { color: '#4a5360', weight: 4, dashArray: '6 6', className: 'dw-route' }).addTo(routeLayer);
    ctx.fit(line.getBounds());
  }

  async function createDummy(): Promise<void> {
    note.textContent = '';
    try {
      const { dummy: d } = await api<{ dummy: Dummy }>('POST', '/api/v1/dummies', { dummy: { name: dummyName.value.trim() } });
      dummyName.value = '';
      await loadDummies(d.id);
      await ctx.refreshDevices();
      ctx.select(d.deviceId);
      status.textContent = `Dummy "${d.name}" created.`;
    } catch (err) {
      note.textContent = `Could not create the dummy: ${message(err)}`;
    }
  }

  async function importFile(file: File): Promise<void> {
    note.textContent = '';
    try {
      const { route: r } = await api<{ route: Route }>('POST', '/api/v1/routes', { route: { file: await file.text(), fileName: file.name } });
      await loadRoutes(r.id);
      status.textContent = `Imported route "${r.name}" (${fmt.km(r.distanceByGPS)}).`;
    } catch (err) {
      note.textContent = `Import failed: ${message(err)}`;
    }
  }

  async function startRun(): Promise<void> {
    note.textContent = '';
    const d = dummy();
    if (!d) { note.textContent = 'Create or pick a dummy first.'; return; }
    try {
      await api('POST', `/api/v1/dummies/${d.id}/runs`, { run: { vin: vin.value.trim(), routeId: routeSelect.value, repeat: repeat.checked, speed: Number(speed.value) } });
      ctx.select(d.deviceId);
      void watch();
    } catch (err) {
      note.textContent = `Could not start the run: ${message(err)}`;
    }
  }

  async function stopRun(): Promise<void> {
    const d = dummy();
    if (!d) return;
    try {
      await api('DELETE', `/api/v1/dummies/${d.id}/runs/_current`);
      void watch();
    } catch (err) {
      note.textContent = `Could not stop the run: ${message(err)}`;
    }
  }

  /** Polls the dummy's current run each second while there is one. */
  async function watch(): Promise<void> {
    window.clearTimeout(timer);
    const d = dummy();
    if (!d) { stopBtn.disabled = true; return; }
    let run: Run | null = null;
    try {
      run = (await get<{ run: Run | null }>(`/api/v1/dummies/${d.id}/runs/_current`)).run;
    } catch (err) {
      note.textContent = message(err);
    }
    if (d.id !== dummySelect.value) return;
    startBtn.disabled = !!run;
    stopBtn.disabled = !run || run.status.state === 'stopping';
    if (!run) {
      const last = (await get<{ runs: Run[] }>(`/api/v1/dummies/${d.id}/runs?limit=1`).catch(() => ({ runs: [] }))).runs[0]; // newest first
      progress.value = last?.status.outcome === 'completed' ? 100 : 0;
      status.replaceChildren(last ? h('p', {}, `Last run: ${last.status.outcome ?? last.status.state}`, last.status.error ? ` (${last.status.error})` : '',
        ` · ${last.status.framesSent} frames · ${fmt.km(last.status.distance)} · ended ${fmt.time(last.status.endedAt)}`) : h('p', { class: 'muted' }, 'No run yet.'));
      return;
    }
    const s = run.status;
    const r = routes.find((x) => x.id === s.routeId);
    // The current pass lasts the route's duration / speed of wall-clock time; remainingSeconds counts it down.
    const passSeconds = r ? r.duration / 1000 / s.speed : null;
    if (passSeconds && s.remainingSeconds != null) progress.value = Math.max(0, Math.min(100, 100 * (1 - s.remainingSeconds / passSeconds)));
    else if (s.state === 'starting') progress.value = 0;
    status.replaceChildren(h('table', {}, h('tbody', {},
      row('State', `${s.state}${s.repeat ? ` (repeat, pass ${s.repeatCount + 1})` : ''}`),
      row('Route', r?.name ?? s.routeId),
      row('Progress', `${Math.round(progress.value)} %`),
      row('Frames sent', String(s.framesSent)),
      row('Distance', fmt.km(s.distance)),
      row('Speed', s.lastSpeed == null ? '–' : `${fmt.num(s.lastSpeed)} km/h`),
      row('Time left', s.remainingSeconds == null ? '–' : `${Math.ceil(s.remainingSeconds)} s`),
      ...(s.nextPassAt ? [row('Waiting', `next pass in ${Math.max(0, Math.ceil((Date.parse(s.nextPassAt) - Date.now()) / 1000))} s`
        + (s.waitReason ? `: ${s.waitReason}` : ''))] : []),
    )));
    timer = window.setTimeout(() => void watch(), 1000);
  }

  const row = (k: string, v: string) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, v));

  dummySelect.addEventListener('change', () => {
    const d = dummy();
    if (d) ctx.select(d.deviceId);
    void watch();
  });
  routeSelect.addEventListener('change', showRoute);
  startBtn.addEventListener('click', () => void startRun());
  stopBtn.addEventListener('click', () => void stopRun());
  fileInput.addEventListener('change', () => { if (fileInput.files?.[0]) void importFile(fileInput.files[0]); });
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    const f = e.dataTransfer?.files?.[0];
    if (f) void importFile(f);
  });
  ctx.onShow((p) => { if (p === 'runs') showRoute(); else routeLayer.clearLayers(); });
  void Promise.all([loadDummies(), loadRoutes()]).catch((err) => { note.textContent = message(err); });
}
