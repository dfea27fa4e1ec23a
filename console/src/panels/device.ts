import { get } from '../api.js';
import { fmt, h } from '../dom.js';
import type { Ctx } from '../context.js';
import type { BatteryStatus, DeviceDetail, DeviceStatus, Message, TroubleCode, Vehicle } from '../records.js';
import { mountCommandBox } from './commands.js';
import { PARAMETERS } from '../../../lib/catalog.js';

/** One row per parameter of the message: its catalog name, value and unit (location and accel spelled out). */
function parameterRows(data: Record<string, unknown>): HTMLElement[] {
  return Object.entries(data).map(([key, value]) => {
    const p = PARAMETERS.get(key);
    let text: string;
    let unit = p?.units ?? '';
    if (key === 'location' && value && typeof value === 'object') {
      const [lon, lat] = (value as { coordinates: [number, number] }).coordinates;
      text = `${lat.toFixed(6)}, ${lon.toFixed(6)}`;
      unit = 'lat, lon';
    } else if (key === 'accel' && value && typeof value === 'object') {
      text = Object.entries(value).map(([k, v]) => `${k} ${fmt.num(v as number, 2)}`).join(' · ');
      unit = 'm/s²';
    } else text = Array.isArray(value) ? value.join(', ') : typeof value === 'number' ? fmt.num(value, 2) : String(value);
    const label = p?.name ?? ({ location: 'Location', accel: 'Acceleration (window)' } as Record<string, string>)[key] ?? key;
    return h('tr', {}, h('th', { scope: 'row', title: key }, label), h('td', { class: 'num' }, text), h('td', {}, unit));
  });
}

/** Online or offline, and when the device was last seen and last connected (never: it has not been). */
function statusList(s: DeviceStatus | undefined): HTMLElement {
  const when = (iso: string | null | undefined) => (iso ? fmt.time(iso) : 'never');
  const state = s ? (s.online ? 'online' : 'offline') : 'unknown';
  return h('dl', { class: 'pairs', id: 'device-status' },
    h('dt', {}, 'Status'), h('dd', {}, h('span', { class: `presence ${state}`, 'data-presence': state }, state)),
    h('dt', {}, 'Last seen'), h('dd', {}, when(s?.lastSeenAt)),
    h('dt', {}, 'Last connected'), h('dd', {}, when(s?.lastConnectedAt)));
}

/**
 * Device panel: the device's status, a command box, then the vehicle, active codes, battery and the latest message
 * with named parameters and units.
 */
export function mountDevicePanel(root: HTMLElement, ctx: Ctx): void {
  const head = h('div', { 'aria-live': 'polite' });
  const box = h('section', { 'aria-label': 'Commands' });
  const body = h('div', { 'aria-live': 'polite' });
  root.append(h('h2', {}, 'Selected device'), head, box, body, h('p', { class: 'muted' }, 'Click a device on the map or pick it above. Updates live.'));
  let seq = 0;
  let pending = 0;

  async function render(deviceId: string | null): Promise<void> {
    const n = ++seq;
    commands.show(deviceId);
    if (!deviceId) {
      head.replaceChildren(h('p', {}, 'No device yet. Create a dummy in Runs, or provision a device.'));
      body.replaceChildren();
      return;
    }
    const [device, msgs, vehicle] = await Promise.all([
      get<{ device: DeviceDetail }>(`/api/v1/devices/${deviceId}`),
      get<{ messages: Message[] }>(`/api/v1/devices/${deviceId}/messages?limit=1`),
      get<{ vehicle: Vehicle | null }>(`/api/v1/devices/${deviceId}/vehicles/_latest`).catch(() => ({ vehicle: null })),
    ]);
    const v = vehicle.vehicle;
    const [codes, battery] = v?.id
      ? await Promise.all([
        get<{ codes: TroubleCode[] }>(`/api/v1/vehicles/${v.id}/codes?state=active`).catch(() => ({ codes: [] })),
        get<{ batteryStatus: BatteryStatus | null }>(`/api/v1/vehicles/${v.id}/battery_statuses/_current`)
          .catch(() => ({ batteryStatus: null })),
      ])
      : [{ codes: [] }, { batteryStatus: null }];
    if (n !== seq) return;
    const m = msgs.messages[0];
    const d = ctx.devices.get(deviceId);
    const status = battery.batteryStatus?.status ?? null;
    head.replaceChildren(
      h('p', {}, h('strong', {}, device.device.name ?? d?.name ?? deviceId), h('br'), h('span', { class: 'muted' }, deviceId)),
      statusList(device.device.status),
    );
    body.replaceChildren(
      h('h3', {}, 'Vehicle'),
      v ? h('p', {}, [v.year, v.make, v.model, v.trim].filter(Boolean).join(' ') || 'Unknown model', h('br'), h('span', { class: 'muted' }, `VIN ${v.vin ?? '–'}`))
        : h('p', { class: 'muted' }, 'No vehicle reported yet.'),
      h('h3', {}, 'Battery'),
      h('p', {}, h('span', { class: `badge ${status ?? ''}` }, status ?? 'unknown'),
        battery.batteryStatus?.timestamp ? h('span', { class: 'muted' }, ` at ${fmt.time(battery.batteryStatus.timestamp)}`) : ''),
      h('h3', {}, `Active trouble codes (${codes.codes.length})`),
      codes.codes.length
        ? h('ul', { class: 'list' }, codes.codes.map((c) => h('li', {}, h('strong', {}, c.number), ` ${c.description ?? ''}`)))
        : h('p', { class: 'muted' }, 'None.'),
      h('h3', {}, 'Latest message'),
      m ? h('div', {}, h('p', { class: 'muted' }, fmt.time(m.timestamp)),
        h('table', {}, h('caption', { class: 'muted' }, 'Parameters of the latest message'),
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Parameter'), h('th', { scope: 'col' }, 'Value'), h('th', { scope: 'col' }, 'Unit'))),
          h('tbody', {}, parameterRows(m.data))))
        : h('p', { class: 'muted' }, 'No message yet.'),
    );
  }

  const refresh = () => void render(ctx.selected()).catch((err) => body.replaceChildren(h('p', { class: 'error' }, String(err.message))));
  // A command changing state re-reads the device: its status moves with the connection the command went out on.
  const commands = mountCommandBox(box, ctx, refresh);
  ctx.onSelect(refresh);
  ctx.onShow((p) => { if (p === 'devices') refresh(); });
  // Live: at most one re-read per second of the selected device while a run streams.
  ctx.onLive((deviceId) => {
    if (deviceId !== ctx.selected() || !ctx.visible('devices') || pending) return;
    pending = window.setTimeout(() => { pending = 0; refresh(); }, 1000);
  });
  refresh();
}
