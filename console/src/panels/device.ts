import { get } from '../api.js';
import { fmt, h } from '../dom.js';
import type { Ctx } from '../context.js';
import type { BatteryStatus, Message, TroubleCode, Vehicle } from '../records.js';
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

/** Device panel: the latest message with named parameters and units, the vehicle, active codes, battery. */
export function mountDevicePanel(root: HTMLElement, ctx: Ctx): void {
  const body = h('div', { 'aria-live': 'polite' });
  root.append(h('h2', {}, 'Selected device'), body, h('p', { class: 'muted' }, 'Click a device on the map or pick it above. Updates live.'));
  let seq = 0;
  let pending = 0;

  async function render(deviceId: string | null): Promise<void> {
    const n = ++seq;
    if (!deviceId) {
      body.replaceChildren(h('p', {}, 'No device yet. Create a dummy in Runs, or provision a device.'));
      return;
    }
    const [msgs, vehicle] = await Promise.all([
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
    body.replaceChildren(
      h('p', {}, h('strong', {}, d?.name ?? deviceId), h('br'), h('span', { class: 'muted' }, deviceId)),
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
  ctx.onSelect(refresh);
  ctx.onShow((p) => { if (p === 'devices') refresh(); });
  // Live: at most one re-read per second of the selected device while a run streams.
  ctx.onLive((deviceId) => {
    if (deviceId !== ctx.selected() || !ctx.visible('devices') || pending) return;
    pending = window.setTimeout(() => { pending = 0; refresh(); }, 1000);
  });
  refresh();
}
