import { Type } from 'typebox';
import { Links, Nullable, StreamMeta, StreamQuery, Timestamp, Uuid } from '../../schemas/common.js';

export const CodeListQuery = Type.Object({
  ...StreamQuery,
  state: Type.Optional(Type.String({ description: '`active` (still on), `inactive` (resolved) or `all` (default: the full history)' })),
});

export const Occurrence = Type.Object({
  id: Uuid('Occurrence id'),
  deviceId: Uuid('Device that reported the code'),
  vehicleId: Nullable(Uuid('Vehicle the device was in when the code came on')),
  number: Type.String({ description: 'Code, e.g. P0301' }),
  description: Type.String({ description: 'What the code means (SAE J2012 title for generic codes)' }),
  start: Timestamp('First report holding the code'),
  stop: Nullable(Timestamp('First later report without the code; null while the code is on')),
  links: Links('code (the trouble-code record), device, vehicle'),
}, { description: 'Trouble-code occurrence' });

export const Code = Type.Object({
  id: Uuid('Trouble-code record id (the `code` of dtc-on / dtc-off event meta)'),
  number: Type.String({ description: 'Code, e.g. P0301' }),
  description: Type.String({ description: 'What the code means; says so when the code is not in the generic table' }),
  make: Type.String({ description: '`generic` for SAE-defined codes, `manufacturer` for manufacturer-controlled ranges' }),
  system: Type.String({ description: 'powertrain (P), chassis (C), body (B) or network (U)' }),
  subsystem: Type.String({ description: 'Area from the code structure, e.g. P03xx = Ignition system or misfire' }),
  links: Links('self'),
}, { description: 'Trouble code (single-code record)' });

export const BatteryStatus = Type.Object({
  status: Nullable(Type.Union([Type.Literal('green'), Type.Literal('yellow'), Type.Literal('red')], {
    description: 'green = likely to start, yellow = may have issues starting, red = likely not to start; null = no recent reading',
  })),
  timestamp: Nullable(Timestamp('Time of the reading that set the status; null with a null status')),
}, { description: 'Battery status; thresholds in docs/concepts/diagnostics-and-collisions.md' });

export const CodeList = Type.Object({ codes: Type.Array(Occurrence), meta: StreamMeta });
export const CodeResponse = Type.Object({ code: Code });
export const BatteryResponse = Type.Object({ batteryStatus: BatteryStatus });
export const CodeIdParams = Type.Object({ codeId: Uuid('Trouble-code record id') });
