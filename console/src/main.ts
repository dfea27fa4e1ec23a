import './styles.css';
import { ApiError, get, restore, signIn, signOut, Stream, who, type Credentials } from './api.js';
import { $, h } from './dom.js';
import { createMap, deviceIcon, L, settings } from './map.js';
import type { Ctx, DeviceState } from './context.js';
import type { Device, Locations, Message, Page } from './records.js';
import { mountDevicePanel } from './panels/device.js';
import { mountRunsPanel } from './panels/runs.js';
import { mountTripsPanel } from './panels/trips.js';
import { mountRulesPanel } from './panels/rules.js';

type Panel = 'devices' | 'runs' | 'trips' | 'rules';
const PANELS: Panel[] = ['devices', 'runs', 'trips', 'rules'];

let ctx: Ctx | null = null;
let stream: Stream | null = null;
let refreshTimer = 0;

/** While the sign-in dialog is up, nothing behind it takes focus. */
function modal(on: boolean): void {
  for (const id of ['bar', 'main']) $(id).inert = on;
  document.querySelector<HTMLElement>('.skip')!.inert = on;
}

function showSignIn(message = ''): void {
  modal(true);
  $('signin').hidden = false;
  $('main').hidden = true;
  $('sign-out').hidden = true;
  $('who').textContent = '';
  $('signin-error').textContent = message;
  $<HTMLInputElement>('app-id').focus();
}

/** A refused sign-in says why, in the API's own words (its error body). */
function describe(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 401) return `Sign-in refused: ${err.body?.message ?? 'Unauthorized'} (401). Check the application id and secret, or the token.`;
    return `Sign-in failed: ${err.message}`;
  }
  return `Cannot reach the platform: ${(err as Error).message}`;
}

async function onSubmit(ev: Event): Promise<void> {
  ev.preventDefault();
  const id = $<HTMLInputElement>('app-id').value.trim();
  const secret = $<HTMLInputElement>('app-secret').value;
  const token = $<HTMLInputElement>('app-token').value.trim();
  const error = $('signin-error');
  let c: Credentials;
  if (token) c = { kind: 'bearer', token };
  else if (id && secret) c = { kind: 'basic', id, secret };
  else {
    error.textContent = 'Enter the application id and secret, or a token.';
    return;
  }
  error.textContent = '';
  const button = $<HTMLButtonElement>('signin-submit');
  button.disabled = true;
  try {
    await signIn(c);
    $<HTMLInputElement>('app-secret').value = '';
    $<HTMLInputElement>('app-token').value = '';
    start();
  } catch (err) {
    error.textContent = describe(err);
  } finally {
    button.disabled = false;
  }
}

function setupTabs(onShow: (p: Panel) => void): { current: () => Panel; show: (p: Panel) => void } {
  let current: Panel = 'devices';
  const tabs = PANELS.map((p) => $<HTMLButtonElement>(`tab-${p}`));
  const show = (p: Panel, focus = false) => {
    current = p;
    PANELS.forEach((q, i) => {
      tabs[i].setAttribute('aria-selected', String(q === p));
      tabs[i].tabIndex = q === p ? 0 : -1;
      $(`p-${q}`).hidden = q !== p;
    });
    if (focus) tabs[PANELS.indexOf(p)].focus();
    onShow(p);
  };
  tabs.forEach((t, i) => {
    t.addEventListener('click', () => show(PANELS[i]));
    // Arrow keys move between tabs (WAI-ARIA tabs pattern); Tab leaves the tab list.
    t.addEventListener('keydown', (e) => {
      const d = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
      if (d) show(PANELS[(i + d + PANELS.length) % PANELS.length], true);
    });
  });
  return { current: () => current, show: (p) => show(p) };
}

function start(): void {
  modal(false);
  $('signin').hidden = true;
  $('main').hidden = false;
  $('sign-out').hidden = false;
  $('who').textContent = `Signed in as ${who()}`;
  if (ctx) {
    ctx.map.invalidateSize();
    void ctx.refreshDevices();
    stream?.open();
    return;
  }
  const map = createMap($('map'), settings());
  const devices = new Map<string, DeviceState>();
  const selectListeners: ((id: string | null) => void)[] = [];
  const liveListeners: ((id: string, m: Message) => void)[] = [];
  const showListeners: ((p: string) => void)[] = [];
  let selected: string | null = null;
  /** Set once a panel or the user has chosen what the map shows: device loading then no longer moves the view. */
  let viewChosen = false;
  map.on('dragstart', () => { viewChosen = true; });
  const select = $<HTMLSelectElement>('device-select');
  let tabs = { current: () => 'devices' as Panel, show: (_p: Panel) => undefined as void };

  const placeMarker = (d: DeviceState) => {
    if (!d.position) return;
    if (!d.marker) {
      d.marker = L.marker(d.position, { icon: deviceIcon(d.name, d.id === selected), title: d.name, alt: d.name, keyboard: true, riseOnHover: true, zIndexOffset: 1000 })
        .on('click', () => { c.select(d.id, { pan: false }); tabs.show('devices'); })
        .addTo(map);
    } else d.marker.setLatLng(d.position);
  };

  const c: Ctx = {
    map, devices,
    selected: () => selected,
    select(id, opts = {}) {
      const prev = selected ? devices.get(selected) : null;
      selected = id;
      select.value = id;
      prev?.marker?.setIcon(deviceIcon(prev.name, false));
      const d = devices.get(id);
      d?.marker?.setIcon(deviceIcon(d.name, true));
      if (opts.pan !== false && d?.position) map.panTo(d.position);
      for (const fn of selectListeners) fn(id);
    },
    async refreshDevices() {
      const list: Device[] = [];
      for (let offset = 0; ; offset += 100) {
        const page = await get<{ devices: Device[] } & Page>(`/api/v1/devices?limit=100&offset=${offset}`);
        list.push(...page.devices);
        if (!page.meta.pagination.links?.next || page.devices.length === 0) break;
      }
      const fresh: DeviceState[] = [];
      for (const dev of list) {
        if (devices.has(dev.id)) continue;
        const d: DeviceState = { id: dev.id, name: dev.name ?? dev.id.slice(0, 8), marker: null, position: null, lastSeen: null };
        devices.set(dev.id, d);
        fresh.push(d);
        stream?.subscribe(dev.id);
      }
      select.replaceChildren(...(devices.size ? [...devices.values()].map((d) => h('option', { value: d.id }, d.name))
        : [h('option', { value: '' }, 'No devices yet')]));
      await Promise.all(fresh.map(async (d) => {
        const loc = await get<Locations>(`/api/v1/devices/${d.id}/locations?limit=1`).catch(() => null);
        const f = loc?.locations?.features?.[0];
        if (f && !d.position) {
          d.position = [f.geometry.coordinates[1], f.geometry.coordinates[0]];
          d.lastSeen = f.properties?.timestamp ?? null;
          placeMarker(d);
        }
      }));
      if (fresh.length && fresh.length === devices.size && !viewChosen) {
        const pts = [...devices.values()].flatMap((d) => (d.position ? [d.position] : []));
        if (pts.length) map.fitBounds(L.latLngBounds(pts), { maxZoom: 15, padding: [30, 30] });
      }
      if (!selected && devices.size) c.select([...devices.keys()][0], { pan: false });
      else if (selected) select.value = selected;
    },
    fit(bounds) {
      viewChosen = true;
      const go = () => { map.fitBounds(bounds, { maxZoom: 16, padding: [30, 30] }); };
      // Leaflet drops a zoom asked for while another zoom animates (Map._tryAnimatedZoom returns early), which
      // left an imported route off screen after the devices' first fit: ask again once that animation ends.
      if ((map as unknown as { _animatingZoom?: boolean })._animatingZoom) map.once('zoomend', go);
      else go();
    },
    onSelect: (fn) => { selectListeners.push(fn); },
    onLive: (fn) => { liveListeners.push(fn); },
    visible: (p) => tabs.current() === p,
    onShow: (fn) => { showListeners.push(fn); },
  };
  ctx = c;
  select.addEventListener('change', () => c.select(select.value));

  stream = new Stream((deviceId, message) => {
    const d = devices.get(deviceId);
    const loc = message?.data?.location;
    if (d && loc?.coordinates) {
      d.position = [loc.coordinates[1], loc.coordinates[0]];
      d.lastSeen = message.timestamp;
      placeMarker(d);
    }
    for (const fn of liveListeners) fn(deviceId, message);
  }, (s) => { $('stream-state').textContent = `stream: ${s}`; });
  stream.open();

  mountDevicePanel($('p-devices'), c);
  mountRunsPanel($('p-runs'), c);
  mountTripsPanel($('p-trips'), c);
  mountRulesPanel($('p-rules'), c);
  tabs = setupTabs((p) => { for (const fn of showListeners) fn(p); });
  void c.refreshDevices().catch(onFailure);
  refreshTimer = window.setInterval(() => void c.refreshDevices().catch(onFailure), 15_000);
  // A handle for the browser tests and for debugging from the devtools console: the map and device positions.
  (window as unknown as Record<string, unknown>).drivewireConsole = {
    map, position: (id: string) => devices.get(id)?.position ?? null, devices: () => [...devices.keys()],
  };
}

/** Credentials revoked or rotated while signed in: back to the sign-in form with the API's answer. */
function onFailure(err: unknown): void {
  if (err instanceof ApiError && err.status === 401) {
    signOut();
    stream?.close();
    showSignIn(describe(err));
  }
}

function main(): void {
  $('signin-form').addEventListener('submit', (e) => void onSubmit(e));
  $('sign-out').addEventListener('click', () => {
    signOut();
    stream?.close();
    window.clearInterval(refreshTimer);
    location.reload();
  });
  if (restore()) start();
  else showSignIn();
}

main();
