import { Type } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../schemas/common.js';

export const AppKind = Type.Union([Type.Literal('enterprise'), Type.Literal('consumer')], {
  description: 'Application kind: a consumer application reads the devices whose owners authorized it; an enterprise application must also register them',
});

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

/** 100 years, in seconds. */
const TOKEN_TTL_MAX_S = 100 * 365 * 86_400;

export const CreateTokenBody = Type.Object({
  // The maximum keeps the expiry a valid date (1e308 s answered 500: an Invalid Date reached the database).
  token: Type.Optional(Type.Object({ ttlSeconds: Type.Optional(Type.Integer({
    minimum: 60, maximum: TOKEN_TTL_MAX_S, description: 'Lifetime in seconds, at most 100 years; none = no expiry',
  })) })),
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
