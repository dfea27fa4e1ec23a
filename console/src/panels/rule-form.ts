import { api, get } from '../api.js';
import { field, fmt, h } from '../dom.js';
import type { Ctx } from '../context.js';
import type { Route, Rule } from '../records.js';
import { DrawTool, type Kind, type Shape } from '../draw.js';
import { decodePolyline, L } from '../map.js';

const HINTS: Record<Kind, string> = {
  radius: 'Click the centre on the map, move out, click again to set the radius. Escape cancels.',
  polygon: 'Click the vertices on the map; click the first one again or Finish to close. Escape cancels.',
  corridor: 'Click the points of the line on the map, then Finish. Escape cancels.',
};

/** A number field's value, or undefined when left empty (the option is then not sent). */
const optional = (input: HTMLInputElement) => (input.value.trim() === '' ? undefined : Number(input.value));

/**
 * The new-rule form: a radius, polygon or corridor boundary drawn on the map (or typed: a radius's centre, a
 * corridor taken from a stored route's line), and the optional dwell, buffer and crossing settings.
 * `created` runs with the rule the API answered.
 */
export function mountRuleForm(root: HTMLElement, ctx: Ctx, message: (err: unknown) => string, created: (rule: Rule) => Promise<void>): { cancel(): void } {
  const name = h('input', { value: 'Geofence', maxlength: 200 });
  const kinds = (['radius', 'polygon', 'corridor'] as const).map((k, i) => h('input', { type: 'radio', name: 'rule-kind', value: k, checked: i === 0 }));
  const lat = h('input', { type: 'number', step: 'any' });
  const lon = h('input', { type: 'number', step: 'any' });
  const radius = h('input', { type: 'number', step: 1, min: 1 });
  const radiusFields = h('div', { class: 'row' }, field('Centre latitude', lat, true), field('Centre longitude', lon, true), field('Radius (m)', radius));
  const polygonInfo = h('p', { class: 'muted', hidden: true }, 'No polygon drawn yet.');
  const width = h('input', { type: 'number', step: 1, min: 1, max: 50000, value: '50', inputmode: 'numeric' });
  const routeSelect = h('select', {}, h('option', { value: '' }, 'None: draw it'));
  const corridorInfo = h('p', { class: 'muted' }, 'No line drawn yet.');
  const corridorFields = h('div', { hidden: true },
    h('div', { class: 'row' }, field('Width either side (m)', width)),
    h('div', { class: 'row' }, field("Line from a route's path", routeSelect, true)), corridorInfo);
  const minInside = h('input', { type: 'number', step: 1, min: 0, max: 86400, inputmode: 'numeric', placeholder: '0' });
  const minOutside = h('input', { type: 'number', step: 1, min: 0, max: 86400, inputmode: 'numeric', placeholder: '0' });
  const buffer = h('input', { type: 'number', step: 1, min: 0, max: 100000, inputmode: 'numeric', placeholder: '0' });
  const crossings = h('input', { type: 'checkbox' });
  const drawBtn = h('button', { type: 'button', class: 'secondary' }, 'Draw on map');
  const finishBtn = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Finish');
  const createBtn = h('button', { type: 'button', disabled: true }, 'Create rule');
  const hint = h('p', { class: 'muted', 'aria-live': 'polite' });
  const note = h('p', { class: 'error', role: 'alert' });
  const drawLayer = L.layerGroup().addTo(ctx.map);
  let routes: Route[] = [];

  const kind = () => (kinds.find((k) => k.checked)?.value ?? 'radius') as Kind;
  const tool = new DrawTool(ctx.map, drawLayer, (shape, done) => {
    if (shape?.type === 'radius') {
      lat.value = String(shape.lat); lon.value = String(shape.lon); radius.value = String(shape.radius);
    }
    if (shape?.type === 'polygon') polygonInfo.textContent = `Polygon of ${shape.coordinates.length - 1} vertices${done ? '' : ' (click the first vertex or Finish to close)'}.`;
    if (shape?.type === 'corridor') corridorInfo.textContent = `Line of ${shape.coordinates.length} points${done ? '' : ' (Finish to end it)'}.`;
    createBtn.disabled = !shape || (shape.type !== 'radius' && !done) || !!(tool?.drawing && shape.type === 'radius');
    if (done) { hint.textContent = 'Shape ready: create the rule.'; finishBtn.hidden = true; }
  });
  tool.width = Number(width.value);

  root.append(
    h('h2', {}, 'New rule'),
    h('div', { class: 'row' }, field('Rule name', name, true)),
    h('fieldset', { class: 'row' }, h('legend', {}, 'Boundary'),
      ...kinds.map((k) => h('label', { class: 'check' }, k, k.value[0].toUpperCase() + k.value.slice(1)))),
    radiusFields, polygonInfo, corridorFields,
    h('div', { class: 'row' }, drawBtn, finishBtn),
    h('fieldset', { class: 'options' }, h('legend', {}, 'Options (leave empty for none)'),
      h('div', { class: 'row' }, field('Min inside (s)', minInside), field('Min outside (s)', minOutside), field('Buffer (m)', buffer)),
      h('div', { class: 'row' }, h('label', { class: 'check' }, crossings, 'Detect crossings between fixes'))),
    h('div', { class: 'row' }, createBtn),
    hint, note,
  );

  const setKind = () => {
    radiusFields.hidden = kind() !== 'radius';
    polygonInfo.hidden = kind() !== 'polygon';
    corridorFields.hidden = kind() !== 'corridor';
    finishBtn.hidden = true;
    routeSelect.value = '';
    tool.cancel();
    createBtn.disabled = true;
    if (kind() === 'corridor' && !routes.length) void loadRoutes();
  };
  for (const k of kinds) k.addEventListener('change', setKind);
  drawBtn.addEventListener('click', () => {
    routeSelect.value = '';
    tool.start(kind());
    finishBtn.hidden = kind() === 'radius';
    hint.textContent = HINTS[kind()];
  });
  finishBtn.addEventListener('click', () => {
    if (tool.finish()) createBtn.focus(); // the Finish button hides: focus goes on to the next step
    else hint.textContent = kind() === 'polygon' ? 'A polygon needs at least 3 vertices.' : 'A line needs at least 2 points.';
  });
  width.addEventListener('input', () => tool.setWidth(Number(width.value)));
  // Typed values (keyboard users) are a shape as much as a drawn one.
  for (const input of [lat, lon, radius]) input.addEventListener('input', () => {
    const s: Shape = { type: 'radius', lat: Number(lat.value), lon: Number(lon.value), radius: Number(radius.value) };
    const ok = lat.value !== '' && lon.value !== '' && Number.isFinite(s.lat) && Number.isFinite(s.lon) && s.radius > 0;
    if (ok) tool.set(s);
    createBtn.disabled = !ok;
  });
  routeSelect.addEventListener('change', () => {
    const r = routes.find((x) => x.id === routeSelect.value);
    if (!r) { tool.cancel(); return; }
    const shape: Shape = { type: 'corridor', coordinates: decodePolyline(r.preview).map(([la, lo]) => [lo, la]) };
    tool.set(shape);
    corridorInfo.textContent = `Line of ${shape.coordinates.length} points along ${r.name}.`;
    ctx.fit(L.latLngBounds(shape.coordinates.map(([lo, la]) => [la, lo])));
    createBtn.disabled = shape.coordinates.length < 2;
  });
  createBtn.addEventListener('click', () => void create());

  async function loadRoutes(): Promise<void> {
    routes = (await get<{ routes: Route[] }>('/api/v1/routes?limit=100')).routes.filter((r) => r.preview);
    routeSelect.replaceChildren(h('option', { value: '' }, 'None: draw it'),
      ...routes.map((r) => h('option', { value: r.id }, `${r.name} (${fmt.km(r.distanceByGPS)})`)));
  }

  function boundary(shape: Shape): Record<string, unknown> {
    const bufferMeters = optional(buffer);
    const extra = bufferMeters === undefined ? {} : { bufferMeters };
    if (shape.type === 'radius') return { type: 'radius', lat: shape.lat, lon: shape.lon, radius: shape.radius, ...extra };
    if (shape.type === 'polygon') return { type: 'polygon', coordinates: [shape.coordinates], ...extra };
    return { type: 'corridor', coordinates: shape.coordinates, widthMeters: Number(width.value), ...extra };
  }

  async function create(): Promise<void> {
    const deviceId = ctx.selected();
    const shape = tool.shape;
    note.textContent = '';
    if (!deviceId || !shape) { note.textContent = 'Pick a device and draw a shape first.'; return; }
    const rule: Record<string, unknown> = { name: name.value.trim() || 'Geofence', boundaries: [boundary(shape)] };
    if (optional(minInside) !== undefined) rule.minInsideSeconds = optional(minInside);
    if (optional(minOutside) !== undefined) rule.minOutsideSeconds = optional(minOutside);
    if (crossings.checked) rule.detectCrossings = true;
    try {
      const { rule: made } = await api<{ rule: Rule }>('POST', `/api/v1/devices/${deviceId}/rules`, { rule });
      tool.cancel();
      routeSelect.value = '';
      hint.textContent = `Rule "${made.name}" created; its events appear below as the device enters and leaves it.`;
      await created(made);
    } catch (err) {
      note.textContent = `Could not create the rule: ${message(err)}`;
    }
  }

  return { cancel: () => tool.cancel() };
}
