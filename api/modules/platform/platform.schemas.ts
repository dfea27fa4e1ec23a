import { Type } from 'typebox';
import { AnyObject, Links, Nullable, OffsetMeta, StreamMeta, Timestamp, Uuid } from '../../schemas/common.js';

export const Device = Type.Object({
  id: Uuid('Device id'),
  name: Type.String({ description: 'Device name' }),
  chipId: Type.String({ description: 'Hardware chip identifier' }),
  createdAt: Timestamp('When the device was provisioned'),
  icon: Type.String({ description: 'Icon URL' }),
  status: Type.Optional(Type.Object({
    online: Type.Boolean({ description: 'Connected to a gateway, or disconnected for less than the presence grace period (--presence-grace-ms)' }),
    lastSeenAt: Nullable(Timestamp('Last frame or MQTT keep-alive (null: never connected)')),
    lastConnectedAt: Nullable(Timestamp('When its current or last MQTT connection opened (null: never connected)')),
  }, { description: 'Presence (an addition to the original platform): docs/concepts/commands-and-presence.md' })),
  links: Links('self, vehicles, latestVehicle, rules, events, subscriptions, trips, commands'),
}, { description: 'Device' });

const VehicleBasicFields = {
  id: Uuid('Vehicle id'),
  vin: Type.String({ description: 'Vehicle identification number' }),
  year: Type.Optional(Type.String({ description: 'Model year (absent when the VIN does not decode it)' })),
  make: Type.Optional(Type.String({ description: 'Make (absent when the VIN does not decode it)' })),
  model: Type.Optional(Type.String({ description: 'Model (absent when the VIN does not decode it)' })),
  trim: Type.Optional(Type.String({ description: 'Trim (absent when the VIN does not decode it)' })),
  createdAt: Timestamp("When the vehicle was first seen by one of the caller's devices"),
  lastStartup: Nullable(Timestamp("Last startup event of the vehicle from the caller's devices (another application's devices in the same vehicle are not counted)")),
};

export const VehicleBasic = Type.Object({ ...VehicleBasicFields, links: Links('self, trips, collisions, reportCards') },
  { description: 'Vehicle (basic fields; follow links.self for data)' });

export const Vehicle = Type.Object({
  ...VehicleBasicFields,
  data: AnyObject('Decoded vehicle details: engine, transmission, body, fuel and other VIN-derived data'),
  links: Links('self'),
}, { description: 'Vehicle with data' });

export const Transaction = Type.Object({
  id: Uuid('Transaction id'),
  timestamp: Timestamp('When the call was made'),
  path: Type.String({ description: 'Request path with query' }),
  statusCode: Type.Integer({ description: 'HTTP status of the call' }),
  method: Type.String({ description: 'HTTP method' }),
  service: Type.String({ description: '<prefix>-<kind>-service' }),
}, { description: 'Transaction: one recorded API call' });

export const DeviceList = Type.Object({ devices: Type.Array(Device), meta: OffsetMeta });
export const DeviceResponse = Type.Object({ device: Device });
export const DeviceGroup = Type.Object({
  id: Uuid('Group id'), name: Type.String({ description: 'Group name' }), links: Links('self'),
}, { description: 'A group of devices (drivewire has no groups: every device is in none)' });
export const DeviceGroupList = Type.Object({ groups: Type.Array(DeviceGroup), meta: OffsetMeta });
export const VehicleList = Type.Object({ vehicles: Type.Array(VehicleBasic), meta: OffsetMeta });
export const LatestVehicleResponse = Type.Object({ vehicle: Nullable(VehicleBasic) });
export const VehicleResponse = Type.Object({ vehicle: Vehicle });
export const TransactionList = Type.Object({
  transactions: Type.Array(Transaction),
  meta: Type.Object({
    stats: Type.Object({
      periodTotal: Type.Integer({ description: 'Calls in the requested period' }),
      allTimeTotal: Type.Integer({ description: 'All calls of the application' }),
      serviceUsage: Type.Record(Type.String(), Type.Integer(), { description: 'Calls in the period per service' }),
    }),
    pagination: StreamMeta.properties.pagination,
  }),
});
export const RegisterBody = Type.Object({
  device: Type.Object({ id: Uuid('Id of a device its owner has authorized for this application') }),
});
