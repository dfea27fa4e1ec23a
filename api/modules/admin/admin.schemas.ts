import { Type } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../schemas/common.js';

export const AppKind = Type.Union([Type.Literal('enterprise'), Type.Literal('consumer')], { description: 'Application kind (spec part 5)' });

export const Application = Type.Object({
  id: Uuid('Application id (the Basic auth user name)'),
  name: Type.String(),
  kind: AppKind,
  createdAt: Timestamp('Creation time'),
  secret: Type.Optional(Type.String({ description: 'Secret key (Basic auth password); shown once, on creation' })),
  webhookSecret: Type.Optional(Type.String({ description: 'Key of the HMAC-SHA256 signature on webhook calls; shown on creation' })),
});

export const CreateApplicationBody = Type.Object({
  application: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), kind: AppKind }),
});

export const CreateTokenBody = Type.Object({
  token: Type.Optional(Type.Object({ ttlSeconds: Type.Optional(Type.Integer({ minimum: 60, description: 'Lifetime; none = no expiry' })) })),
});
export const Token = Type.Object({ accessToken: Type.String(), expiresAt: Nullable(Timestamp('Expiry')) });

export const Owner = Type.Object({ id: Uuid('Owner id'), name: Type.String(), email: Nullable(Type.String()), createdAt: Timestamp('Creation time') });
export const CreateOwnerBody = Type.Object({
  owner: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), email: Type.Optional(Type.String({ format: 'email' })) }),
});

export const AdminDevice = Type.Object({
  id: Uuid('Device id (the MQTT user name)'),
  name: Type.String(),
  chipId: Type.String(),
  caseId: Type.String(),
  ownerId: Uuid('Owner id'),
  createdAt: Timestamp('Provisioning time'),
  secret: Type.Optional(Type.String({ description: 'MQTT password; shown once, on provisioning or rotation' })),
});
export const ProvisionDeviceBody = Type.Object({
  device: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 200 }),
    id: Type.Optional(Uuid('Device id to use (default: generated)')),
    chipId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    ownerId: Type.Optional(Uuid('Owner (default: a new owner for this device)')),
  }),
});
export const AuthorizeBody = Type.Object({
  authorization: Type.Object({ applicationId: Uuid('Application the owner authorizes') }),
});
export const Authorization = Type.Object({ deviceId: Uuid('Device'), applicationId: Uuid('Application'), createdAt: Timestamp('When authorized') });
